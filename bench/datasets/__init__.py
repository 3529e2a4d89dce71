"""The benchmark datasets: where their files live, their loaders, and the task shape every loader produces."""
