package webhooks

import (
	"net/netip"
	"testing"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:2800:220:1:248:1893:25c8:1946": true, "8.8.8.8": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00::1": false, "100.64.0.1": false, "0.0.0.0": false,
		"0.1.2.3": false, "::": false, "224.0.0.1": false, "ff02::1": false, "::ffff:127.0.0.1": false,
		"::ffff:169.254.169.254": false,
	} {
		if got := public(netip.MustParseAddr(addr).Unmap()); got != want {
			t.Errorf("public(%s) = %v, want %v", addr, got, want)
		}
	}
	if err := refusePrivate("tcp", "[::ffff:10.0.0.1]:443", nil); err == nil {
		t.Error("IPv4-mapped private address allowed")
	}
	if err := refusePrivate("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("public address refused: %v", err)
	}
}
