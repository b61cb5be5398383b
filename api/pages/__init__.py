"""The public pages people read in a browser: the contests' list and each contest's scoreboard,
written on the server (they read without JavaScript) and kept live by a server-sent stream.
`layout` draws the skeleton, `board` the generic scoreboard, `games` each game's own part."""
