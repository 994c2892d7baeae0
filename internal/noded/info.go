package noded

import (
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// Version is the build a node says it runs (GetNodeInfo; triad status):
// the commit it was built from, "+modified" for a tree with changes,
// or the module's version without version control information.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		return info.Main.Version
	}
	return rev[:min(len(rev), 12)] + modified
}

// diskOf says the bytes free (for an unprivileged writer) and in all on
// the file system of dir.
func diskOf(dir string) func() (free, total uint64) {
	return func() (uint64, uint64) {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return 0, 0
		}
		return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize)
	}
}
