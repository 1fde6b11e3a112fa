"""The curvature models a ZoVH iteration learns across iterations: the diagonal one
(`diagonal`), the full one (`full`) with its least-squares fit (`fit`), and the kept pairs'
transport (`carried_transport`). They know the estimators and the arrays, no method."""
