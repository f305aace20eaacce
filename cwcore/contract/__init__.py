"""The contract between the engine and its faces and hosts: records whose JSON is derived from
their field declarations (:mod:`cwcore.contract.codec`). Low in the layers: it imports only the
errors, the clock's time parsing (:mod:`cwcore.clock`) and the plain records under it
(:mod:`cwcore.model`), so every package may declare its answers with it."""
