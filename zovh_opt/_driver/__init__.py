"""The driver: `Optimizer` (`optimizer`) and the parts of a run around one method object,
the front doors `minimize` and SciPy's custom method (`minimize`), new starts
(`new_starts`), the quasi-Newton phase (`quasi_newton`) and checkpoints (`run_state`,
`checkpoint`). The top layer; `docs/architecture.md` draws it."""
