"""Array-library utilities: namespaces, dtypes and devices (`backend`), the seeded direction
streams, CuPy's counter-based normals (`device_normals`) and the CPU draws' threads
(`threads`). The bottom layer: it imports no other part of zovh_opt."""
