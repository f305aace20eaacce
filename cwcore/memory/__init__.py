"""Memory records: durable statements an agent should keep in mind, the processor
pipeline that selects them per turn, and the injection block that delivers them."""
