//go:build linux

package outfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// symlinkOwned makes the symbolic link link -> dest, owned by uid.
func symlinkOwned(t *testing.T, dest, link string, uid int) {
	t.Helper()
	if err := os.Symlink(dest, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// mkdirs makes the directories, mode 0755.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// assertMissing checks that nothing was written at path.
func assertMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s was written (%v)", path, err)
	}
}

// TestWriteRefusesOthersParentLinks: a link above the file, owned by
// another user, is not followed, however deep in the path or in a chain
// of links it is; the refusal names it and its owner. The case:
// root writing /tmp/x/linkdir/snap.yaml, linkdir -> target planted by
// nobody in a sticky directory.
func TestWriteRefusesOthersParentLinks(t *testing.T) {
	testenv.RequireRoot(t)
	const nobody = 65534
	dir := t.TempDir()
	sticky, target := filepath.Join(dir, "x"), filepath.Join(dir, "target")
	mkdirs(t, sticky, target, filepath.Join(dir, "a", "b"))
	if err := os.Chmod(sticky, 0o1777); err != nil {
		t.Fatal(err)
	}
	linkdir := filepath.Join(sticky, "linkdir")
	symlinkOwned(t, target, linkdir, nobody)
	// Deeper: a/b/deep -> target, nobody's, below root's own directories.
	deep := filepath.Join(dir, "a", "b", "deep")
	symlinkOwned(t, target, deep, nobody)
	// Chained: root's mine -> theirs, nobody's theirs -> target.
	mine, theirs := filepath.Join(dir, "mine"), filepath.Join(dir, "theirs")
	symlinkOwned(t, "theirs", mine, 0)
	symlinkOwned(t, target, theirs, nobody)
	for path, link := range map[string]string{
		filepath.Join(linkdir, "snap.yaml"): linkdir,
		filepath.Join(deep, "snap.yaml"):    deep,
		// filepath.Join would clean the "..".
		deep + "/../f":                   deep,
		filepath.Join(mine, "snap.yaml"): theirs,
	} {
		for name, err := range map[string]error{"Check": checkErr(path), "Write": Write(path, writeString("x"))} {
			t.Run(name+" "+path, func(t *testing.T) {
				assertRefused(t, err, path, link+" is a symbolic link owned by uid 65534, neither root nor the running user (uid 0)")
			})
		}
	}
	assertMissing(t, filepath.Join(target, "snap.yaml"))
	assertMissing(t, filepath.Join(dir, "f"))
	assertNoTemp(t, target)
}

func checkErr(path string) error {
	_, err := Check(path)
	return err
}

// TestWriteThroughOwnParentLinks: links above the file that root or the
// running user owns are followed, nested and relative ones too, and the
// file lands where the kernel would resolve the path.
func TestWriteThroughOwnParentLinks(t *testing.T) {
	dir := t.TempDir()
	target, elsewhere := filepath.Join(dir, "target"), filepath.Join(dir, "elsewhere", "deep")
	mkdirs(t, target, elsewhere, filepath.Join(dir, "a"))
	links := map[string]string{
		filepath.Join(dir, "abs"):      target,
		filepath.Join(dir, "a", "rel"): filepath.Join("..", "target"),
		filepath.Join(dir, "chain"):    "abs",
		filepath.Join(dir, "up"):       elsewhere,
	}
	for link, dest := range links {
		symlinkOwned(t, dest, link, os.Geteuid())
	}
	for path, lands := range map[string]string{
		filepath.Join(dir, "abs", "one"):      filepath.Join(target, "one"),
		filepath.Join(dir, "a", "rel", "two"): filepath.Join(target, "two"),
		filepath.Join(dir, "chain", "three"):  filepath.Join(target, "three"),
		dir + "/a/rel/../a/rel/four":          filepath.Join(target, "four"),
		// ".." after a link is the parent of where it leads, as for the
		// kernel: elsewhere, not dir.
		dir + "/up/../five": filepath.Join(dir, "elsewhere", "five"),
	} {
		tgt, err := Check(path)
		if err != nil || tgt.Path != lands {
			t.Errorf("Check(%s) = %+v, %v; want %s", path, tgt, err, lands)
		}
		if err := Write(path, writeString(path)); err != nil {
			t.Fatal(err)
		}
		assertFile(t, lands, path, 0o600)
		kernel, _ := os.ReadFile(path)
		if string(kernel) != path {
			t.Errorf("the kernel resolves %s to another file than the one written, %s", path, lands)
		}
	}
	for link := range links {
		if fileType(t, link) != os.ModeSymlink {
			t.Errorf("%s is no longer a symbolic link", link)
		}
	}
	assertNoTemp(t, target)
}

// TestWriteRelativePath: a relative path is walked from the working
// directory, its links checked as an absolute path's.
func TestWriteRelativePath(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	mkdirs(t, target)
	symlinkOwned(t, "target", filepath.Join(dir, "link"), os.Geteuid())
	t.Chdir(dir)
	if err := Write(filepath.Join("link", "rel"), writeString("rel\n")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(target, "rel"), "rel\n", 0o600)
	if os.Geteuid() != 0 {
		return
	}
	symlinkOwned(t, "target", filepath.Join(dir, "theirs"), 65534)
	assertRefused(t, Write(filepath.Join("theirs", "rel"), writeString("x")), filepath.Join("theirs", "rel"),
		filepath.Join(dir, "theirs")+" is a symbolic link owned by uid 65534")
}

// TestWriteRefusesNonDirectoryParents: a path through a file or a missing
// directory is an error, and nothing is created on the way.
func TestWriteRefusesNonDirectoryParents(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(file, "x"), filepath.Join(dir, "missing", "x"), dir + "/", dir} {
		if err := Write(path, writeString("x")); err == nil {
			t.Errorf("write %s: no error", path)
		}
	}
	assertMissing(t, filepath.Join(dir, "missing"))
}
