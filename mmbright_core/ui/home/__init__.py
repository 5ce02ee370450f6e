"""The Home page: the runs of a task, their headline numbers and the leaderboard."""
