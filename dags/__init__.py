"""Airflow DAGs: thin TaskFlow layers over `baseline.pipeline` (the only package they import)."""
