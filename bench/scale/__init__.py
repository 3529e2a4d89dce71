"""A store at scale: LoCoMo's conversations hidden among generated distractor notes, 10k to 1M engrams.

``python -m bench scale --sizes 10000,100000,1000000`` (:mod:`bench.scale.run`) builds each store once
(:mod:`bench.scale.homes`, distractors from :mod:`bench.scale.distractors`), keeps it and its embeddings
between runs, and measures it in fresh processes (:mod:`bench.scale.measure`).
"""
