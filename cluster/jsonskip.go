package cluster

import (
	"encoding/binary"
	"math/bits"
)

// Broadcast bytes for nextStructural's word-at-a-time search.
const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
	swarQuote = '"' * swarOnes
	swarCase  = 0x20 * swarOnes // '[' | 0x20 == '{', ']' | 0x20 == '}'
	swarOpen  = '{' * swarOnes
	swarClose = '}' * swarOnes
)

// nextStructural is the offset of the first of '"', '{', '}', '[' or ']'
// in b at or after i, or len(b). It tests eight bytes at a time: a byte
// of x equal to c is a zero byte of x^c, and zeroBytes marks the lowest
// zero byte of a word exactly (bytes above it may be marked falsely, so
// only the lowest mark is used).
func nextStructural(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		folded := x | swarCase
		if m := zeroBytes(x^swarQuote) | zeroBytes(folded^swarOpen) | zeroBytes(folded^swarClose); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '"', '{', '}', '[', ']':
			return i
		}
	}
	return i
}

// zeroBytes sets the high bit of the lowest zero byte of v, and perhaps
// of bytes above it; it is 0 when v has no zero byte.
func zeroBytes(v uint64) uint64 {
	return (v - swarOnes) &^ v & swarHighs
}
