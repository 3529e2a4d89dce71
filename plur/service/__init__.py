"""The service layer: the long-lived local plur process that hosts reach (JSON API, daemon, client).

Sits above :mod:`plur.prompt` and beside :mod:`plur.web`; see the README's architecture section.
"""
