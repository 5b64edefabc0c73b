"""Context selectors: one interface (:class:`generation.selectors.base.Selector`),
one module per method; the registry in :mod:`generation.policies` loads them lazily."""
