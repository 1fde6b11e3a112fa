"""The noise machinery: robust statistics of a batch (`robust`), whether the objective is
noisy (`monitor`), a noisy run's centre against its best point (`drift`) and the average of
its centres (`centre_average`). Below the methods, which read batches robustly once noise is
known; the driver decides when to measure."""
