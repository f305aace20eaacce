def canonical(value: object) -> str:
    """``value`` as canonical JSON text (keys sorted at every depth): how goldens compare
    answers — as parsed JSON, whatever order the codec writes keys in, while ``1``, ``1.0`` and
    ``true`` stay different."""
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)
