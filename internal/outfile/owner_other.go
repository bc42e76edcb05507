//go:build !unix

package outfile

import "io/fs"

// linkOwnerRefusal follows every link here: creating a symbolic link on
// Windows takes a privilege or developer mode, and file ownership is not
// the uid the unix check compares.
func linkOwnerRefusal(fs.FileInfo) string { return "" }
