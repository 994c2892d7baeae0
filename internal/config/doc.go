// Package config reads triad's configuration file: one TOML file per
// node or site that holds what its command-line flags would say.
//
// It implements no paper; it is operations (issue 17): the file has a
// table per command, [node], [nntp] and [up], whose keys are that
// command's flag names (listen, data, cache-mb, ...), and an array of
// tables [[nntp.peer]] for a news site's peers and feeds. A flag given on
// the command line overrides the file. Every setting keeps the line it was
// read from, so that an unknown key, a value the flag refuses, an address
// that is not host:port or a negative number is reported as FILE:LINE,
// and so are the commands' own checks of a value that came from the file.
//
// The schema is the flags themselves: a flag added to a command is a key
// of its table at once, and `triad config example` prints every key with
// its default and its help. The commands' Options are the tables' schema
// (Tables): ApplyOptions sets them from a table, Check validates a whole
// file (triad config check) and WriteExample writes one.
package config
