"""Adapters that put plur's memory block into a host's prompt.

* :mod:`plur.hosts.registry`: a plain registry of named, ordered prompt sections re-rendered on
  every request, for hosts in any framework (or none).
* :mod:`plur.hosts.pydantic_ai`: registers a :class:`~plur.prompt.section.MemorySection` as a
  pydantic-ai ``Agent``'s per-request instructions (extra ``host``: ``pip install -e '.[host]'`` in the plur checkout).

Nothing here is imported by ``import plur``.
"""
