"""A team's own page (`/team`): sign in with the team token, upload from the browser, follow the
team's submissions and read each report, with its receipt checked against the contest's log.

`routes` holds the page's routes, the only ones the team session's cookie counts on; `html`
writes the pages; `listing` the team's submissions as the page shows them; `log_check` the
receipt and transparency-log check in words; `games` each game's part of a report.
"""
