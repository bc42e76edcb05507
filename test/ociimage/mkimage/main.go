// Command mkimage writes a multi-platform OCI image archive from one root
// filesystem directory per platform (test/ociimage). hack/image.sh
// runs it:
//
//	go run ./test/ociimage/mkimage -out img.tar -ref registry.local/x:dev \
//	    -rootfs linux/amd64=DIR -rootfs linux/arm64=DIR \
//	    -entrypoint /usr/local/bin/x -env PATH=/usr/bin -label k=v -created 1700000000
//
// It prints the archive's path, then per platform the manifest digest and
// the image's compressed and uncompressed size.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	out := fs.String("out", "", "the archive to write")
	ref := fs.String("ref", "", "the image's name, e.g. registry.local/kubectl-svcproxy:dev")
	created := fs.Int64("created", 0, "creation time, seconds since the Unix epoch (0: the epoch)")
	user := fs.String("user", "", "the user the image runs as (empty: root)")
	var rootfs, entrypoint, cmd, env, labels list
	fs.Var(&rootfs, "rootfs", "PLATFORM=DIR, e.g. linux/amd64=_cache/rootfs (repeat per platform)")
	fs.Var(&entrypoint, "entrypoint", "an entrypoint word (repeat for each)")
	fs.Var(&cmd, "cmd", "a default argument (repeat for each)")
	fs.Var(&env, "env", "KEY=value (repeat)")
	fs.Var(&labels, "label", "key=value (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *ref == "" || len(rootfs) == 0 || fs.NArg() > 0 {
		return fmt.Errorf("need -out, -ref and at least one -rootfs, and no arguments")
	}
	labelMap := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("-label %q: want key=value", l)
		}
		labelMap[k] = v
	}
	var images []ociimage.Image
	for _, r := range rootfs {
		plat, dir, ok := strings.Cut(r, "=")
		if !ok {
			return fmt.Errorf("-rootfs %q: want PLATFORM=DIR", r)
		}
		p, err := ociimage.ParsePlatform(plat)
		if err != nil {
			return err
		}
		images = append(images, ociimage.Image{
			Platform: p, Layers: []ociimage.Layer{{Dir: dir}},
			Entrypoint: entrypoint, Cmd: cmd, Env: env, User: *user, Labels: labelMap,
			Created: time.Unix(*created, 0),
		})
	}
	a, err := ociimage.WriteArchive(*out, *ref, images...)
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%s\tindex %s\n", *out, *ref, a.Index)
	for _, w := range a.Images {
		fmt.Printf("%s\tmanifest %s\tcompressed %s\tuncompressed %s\n",
			w.Platform, w.Manifest, size(w.Compressed), size(w.Uncompressed))
	}
	return nil
}

// size prints bytes in MiB with the exact count.
func size(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB (" + strconv.FormatInt(n, 10) + " bytes)"
}
