package statefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

var testKey = Key{Format: "test v1", BootID: "6f1c5d2e-0d7e-4c1a-9a57-3f1d8c2b9e40", NetnsCookie: 4097, Generation: 6}

func TestEnvelopeMismatchesAreMisses(t *testing.T) {
	payload := []byte("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n")
	data, err := Seal(testKey, payload)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Unseal(data, testKey); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Unseal of a sealed payload: %q, %v", got, err)
	}
	other := func(edit func(*Key)) Key { k := testKey; edit(&k); return k }
	for name, key := range map[string]Key{
		"boot ID":      other(func(k *Key) { k.BootID = "0a6a8f5e-5f43-4a44-8f3e-2b9a1d7c6e11" }),
		"netns cookie": other(func(k *Key) { k.NetnsCookie = 4098 }),
		"generation":   other(func(k *Key) { k.Generation = 7 }),
		"format":       other(func(k *Key) { k.Format = "test v2" }),
	} {
		if _, err := Unseal(data, key); !errors.Is(err, ErrMismatch) {
			t.Errorf("another %s: %v, want ErrMismatch", name, err)
		}
	}
	for n := range len(data) {
		if _, err := Unseal(data[:n], testKey); !errors.Is(err, ErrMismatch) {
			t.Fatalf("cut to %d of %d bytes: %v, want ErrMismatch", n, len(data), err)
		}
	}
	if _, err := Unseal(append(bytes.Clone(data), '\n'), testKey); !errors.Is(err, ErrMismatch) {
		t.Errorf("a byte appended: %v, want ErrMismatch", err)
	}
	edited := bytes.Replace(data, []byte("KUBE-SERVICES"), []byte("KUBE-SERVICEZ"), 1)
	if _, err := Unseal(edited, testKey); !errors.Is(err, ErrMismatch) {
		t.Errorf("payload edited (same length): %v, want ErrMismatch", err)
	}
	if _, err := Unseal(payload, testKey); !errors.Is(err, ErrMismatch) {
		t.Errorf("no envelope: %v, want ErrMismatch", err)
	}
	for _, k := range []Key{other(func(k *Key) { k.NetnsCookie = 0 }), other(func(k *Key) { k.BootID = "" }), other(func(k *Key) { k.Format = "a\nb" })} {
		if _, err := Seal(k, payload); err == nil {
			t.Errorf("Seal with the incomplete key %+v succeeded", k)
		}
	}
}

func TestLoadRemovesWhatDoesNotMatch(t *testing.T) {
	d := openTestDir(t, filepath.Join(t.TempDir(), "state"))
	if _, err := d.Load("cache", testKey); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing file: %v, want ErrNotExist", err)
	}
	if err := d.Store("cache", testKey, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Load("cache", testKey); err != nil || string(got) != "payload" {
		t.Fatalf("Load after Store: %q, %v", got, err)
	}
	assertMode(t, filepath.Join(d.Path(), "cache"), 0o600)
	next := testKey
	next.Generation++
	if _, err := d.Load("cache", next); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Load at another generation: %v, want ErrMismatch", err)
	}
	if _, err := os.Lstat(filepath.Join(d.Path(), "cache")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file that does not match was left in place: %v", err)
	}
	entries, _ := os.ReadDir(d.Path())
	if len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}

func TestBootID(t *testing.T) {
	id, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 36 {
		t.Fatalf("boot ID %q", id)
	}
}

func TestTypeShape(t *testing.T) {
	type inner struct{ A, B string }
	type v1 struct {
		Name  string
		Items []*inner
	}
	type v2 struct {
		Name  string
		Items []*struct{ A, B, C string }
	}
	type renamed struct {
		Name  string
		Items []*struct{ A, B string }
	}
	if TypeShape(v1{}) == TypeShape(v2{}) {
		t.Error("a field added deep inside does not change the shape")
	}
	if TypeShape(v1{}) != TypeShape(renamed{}) {
		t.Error("the same structure under other type names has another shape")
	}
}
