"""The held-out incident suite: realistic production incidents with metric history, logs,
one firing alerting rule, one red herring and an answer key (dev/ and test/ splits)."""
