package main

import (
	"embed"
	"fmt"
)

// The commands' descriptions, printed by --help, are text files in help/.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help is the text of help/NAME.txt.
func help(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(fmt.Sprintf("triad: no help text %s: %v", name, err))
	}
	return string(b)
}
