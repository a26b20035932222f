"""``PLUGINS`` is registry data: kind -> name -> "module:attr" of the factory."""

PLUGINS: dict = {}
