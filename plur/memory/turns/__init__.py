"""What a conversation turn says about memory itself, read with no LLM (pure text rules, each one module):

=======================  =====================================================================================
:mod:`.forget_request`   does the turn ask to forget something ("please forget my SSN")? what does it name?
:mod:`.personal`         is a note about the user (family, health, identity, preferences, habits) or the code?
:mod:`.forget_turn`      forgetting what a request names (this conversation, this project, global) and the
                         one-line notice the next block carries
=======================  =====================================================================================

Capture (:mod:`plur.memory.capture`) applies them to every captured user turn; the settings
``forget_requests`` and ``route_personal`` turn each off.
"""
