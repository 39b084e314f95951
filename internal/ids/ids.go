// Package ids makes the opaque 25-character identifiers the API hands out.
// They look like cuids (a leading "c", then lowercase base-36): a time part so
// that they sort roughly by creation, a counter and random bits.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

var counter atomic.Uint32

const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// New returns a new 25-character id.
func New() string {
	var b strings.Builder
	b.Grow(25)
	b.WriteByte('c')
	// 9 chars of milliseconds (base 36 covers ~3,000 years).
	writePadded(&b, uint64(time.Now().UnixMilli()), 9)
	// 4 chars of counter.
	writePadded(&b, uint64(counter.Add(1))%(36*36*36*36), 4)
	// 11 chars of randomness.
	var r [8]byte
	_, _ = rand.Read(r[:])
	writePadded(&b, binary.LittleEndian.Uint64(r[:])%pow36(11), 11)
	return b.String()
}

func pow36(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 36
	}
	return p
}

func writePadded(b *strings.Builder, v uint64, width int) {
	s := strconv.FormatUint(v, 36)
	for i := len(s); i < width; i++ {
		b.WriteByte('0')
	}
	if len(s) > width {
		s = s[len(s)-width:]
	}
	b.WriteString(s)
}

// Valid reports whether s has the shape of an id made by New.
func Valid(s string) bool {
	if len(s) != 25 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(alphabet, rune(s[i])) {
			return false
		}
	}
	return true
}
