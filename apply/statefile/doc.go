// Package statefile keeps the tool's files on the node (the run lock, the
// caches of what the kernel holds) safe from other users and from stale
// or foreign content.
//
// A directory is opened once, by file descriptor, and checked as ssh
// checks its files: the directory itself, and each directory the tool
// creates under it, must be owned by the running user and not writable by
// its group or others, and may not be a symbolic link; every directory
// above it must be owned by root or the running user and not writable by
// its group or others unless it is sticky (as /tmp is), and a symbolic
// link on the way is followed only when root or the user owns it. Files
// are then opened relative to that descriptor with O_NOFOLLOW and must
// pass the same test as the directory, so no later rename of a path
// component can redirect them. Missing directories are created with mode
// 0700, files with 0600.
//
// A cache file is an envelope (envelope.go): a header naming what the
// payload is and the exact kernel state it describes, and a checksum.
package statefile

// UnsafeError is a path the tool refuses to use, and why.
type UnsafeError struct {
	Path   string
	Reason string
}

func (e *UnsafeError) Error() string { return "refusing " + e.Path + ": " + e.Reason }
