"""`import eroica.auto` turns eroica on in this process (no other code change needed)."""

from . import bootstrap as _bootstrap

try:
    _bootstrap.enable()
except Exception as _e:  # eroica must never break the importing script
    from . import hooks as _hooks

    _hooks.disable(_e)
