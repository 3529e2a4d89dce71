"""Scoring tasks with plur's real engine: a store per task (a folder, or a PostgreSQL schema), learned or
captured, recalled per variant; in process or as Ray tasks."""
