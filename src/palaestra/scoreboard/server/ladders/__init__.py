"""The ladder: games between players, stored and rated (:mod:`.service`), each game's record checked
by replaying it (:mod:`.checks`). ``api/ladders.py`` parses and answers; ``tables/ladders.py`` is only
tables: the model every resource of the server follows."""
