"""The scoreboard: the ``/v1`` wire protocol (:mod:`.protocol`), the upload client (:mod:`.client`)
and the self-hosted service (:mod:`.server`, needs the ``server`` extra).

Nothing heavy is imported here; import the submodule you need.
"""
