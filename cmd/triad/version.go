package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

var versionAbout = help("version")

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "version", versionAbout, stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErr(fs, "version takes no arguments")
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("this binary carries no build information")
	}
	fmt.Fprint(stdout, versionText(info))
	return nil
}

// versionText is what triad version prints for the build info.
func versionText(info *debug.BuildInfo) string {
	settings := make(map[string]string)
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	commit := "unknown (built without version control information, as by go run)"
	if rev := settings["vcs.revision"]; rev != "" {
		commit = rev
		if t := settings["vcs.time"]; t != "" {
			commit += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			commit += ", modified"
		}
	}
	return fmt.Sprintf("triad %s\ncommit  %s\ngo      %s\n", info.Main.Version, commit, info.GoVersion)
}
