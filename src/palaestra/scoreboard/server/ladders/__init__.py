"""The ladder: games between players, stored and rated (:mod:`.service`), each game's record checked
by replaying it (:mod:`.checks`), who may upload which player names (:mod:`.trust`), the checks and
re-ratings in worker processes (:mod:`.work`: held by the state, so on the infrastructure floor of
``tests/test_import_graph.py``; it imports nothing of the ladders). ``api/ladders.py`` parses and
answers; ``tables/ladders.py`` is only tables: the model every resource of the server follows."""
