package nftables

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"reflect"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// fillAll sets every field reachable from v to a value of its own: each
// string, integer and duration differs from every other, each slice has
// two items and each pointer points.
func fillAll(t *testing.T, v reflect.Value, next *int) {
	t.Helper()
	*next++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d \x00\xff", *next))
	case reflect.Uint64:
		v.SetUint(uint64(*next) << 40)
	case reflect.Int64:
		v.SetInt(-int64(*next) << 33) // time.Duration, negative to test the zig-zag
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), next)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(t, v.Index(i), next)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fillAll(t, v.Field(i), next)
		}
	default:
		t.Fatalf("fillAll: a %s field (%s): teach encodeCache and this test its kind", v.Kind(), v.Type())
	}
}

// TestCacheCodecCoversRuleset: a Ruleset with every field set comes back
// equal, so a field added to nft.Ruleset's types that encodeCache does
// not carry fails here (and changes cacheFormat's shape, so that files of
// a build before are not read).
func TestCacheCodecCoversRuleset(t *testing.T) {
	var full nft.Ruleset
	next := 0
	fillAll(t, reflect.ValueOf(&full).Elem(), &next)
	sparse := &nft.Ruleset{Family: nft.IPv6, Table: "kube-proxy", Sets: []*nft.Set{{Name: "x", Type: "ipv4_addr"}},
		Chains: []*nft.Chain{{Name: "c"}, {Name: "b", Base: &nft.BaseChain{Type: nft.NATType}, Rules: []nft.Rule{""}}}}
	for _, rs := range []*nft.Ruleset{&full, sparse, {Family: nft.IPv4, Table: "t"}, nil} {
		got, err := decodeCache(encodeCache(rs))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, rs) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, rs)
		}
	}
}

// TestCacheCodecRefusesDamage: every payload cut short, and one with a
// byte more, is an error, not a panic or a partial table.
func TestCacheCodecRefusesDamage(t *testing.T) {
	data := encodeCache(syntheticRuleset(3, ""))
	for n := range len(data) {
		if rs, err := decodeCache(data[:n]); err == nil {
			t.Fatalf("a payload cut to %d of %d bytes decoded: %v", n, len(data), rs)
		}
	}
	if _, err := decodeCache(append(bytes.Clone(data), 0)); err == nil {
		t.Fatal("a payload with a byte more decoded")
	}
	huge := append([]byte{1}, 0xff, 0xff, 0xff, 0xff, 0x0f) // a family 4 GiB long
	if _, err := decodeCache(huge); err == nil {
		t.Fatal("a length past the end decoded")
	}
}

// BenchmarkCacheCodec writes and reads the table of a node with N
// Services, as every one-shot apply and plan with --state-dir does, in
// the cache's format and, for comparison, in gob (its format before).
func BenchmarkCacheCodec(b *testing.B) {
	for _, n := range benchsize.Sizes(b, 1000, 10000) {
		rs := syntheticRuleset(n, "")
		data := encodeCache(rs)
		var g bytes.Buffer
		if err := gob.NewEncoder(&g).Encode(struct{ Table *nft.Ruleset }{rs}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("services=%d/encode", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				encodeCache(rs)
			}
		})
		b.Run(fmt.Sprintf("services=%d/decode", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := decodeCache(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("services=%d/gob-encode", n), func(b *testing.B) {
			for b.Loop() {
				var buf bytes.Buffer
				_ = gob.NewEncoder(&buf).Encode(struct{ Table *nft.Ruleset }{rs})
			}
		})
		b.Run(fmt.Sprintf("services=%d/gob-decode", n), func(b *testing.B) {
			for b.Loop() {
				var f struct{ Table *nft.Ruleset }
				_ = gob.NewDecoder(bytes.NewReader(g.Bytes())).Decode(&f)
			}
		})
	}
}

// TestCacheCodecRefusesOddBytes: a presence byte other than 0 or 1, and a
// uvarint past 64 bits, are errors.
func TestCacheCodecRefusesOddBytes(t *testing.T) {
	table := encodeCache(&nft.Ruleset{Family: nft.IPv4, Table: "t"})
	table[0] = 2
	if rs, err := decodeCache(table); err == nil {
		t.Errorf("a table flag of 2 decoded: %#v", rs)
	}
	// The family's length 0 as a uvarint whose tenth byte overflows 64
	// bits to nothing.
	rest := encodeCache(&nft.Ruleset{Table: "t"})[2:]
	long := append([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, rest...)
	if rs, err := decodeCache(long); err == nil {
		t.Errorf("a uvarint past 64 bits decoded: %#v", rs)
	}
	chain := encodeCache(&nft.Ruleset{Chains: []*nft.Chain{{Name: "c", Base: &nft.BaseChain{Type: nft.NATType}}}})
	// 1 (a table), 0 0 0 (family, table, comment), 0 (sets), 1 (chains),
	// 1 'c' (the name), then the base flag.
	chain[8] = 2
	if rs, err := decodeCache(chain); err == nil {
		t.Errorf("a base flag of 2 decoded: %#v", rs)
	}
}
