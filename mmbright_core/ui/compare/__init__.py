"""The Compare page: two runs paired, where B wins and loses, the report."""
