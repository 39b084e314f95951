package delivery_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/delivery"
)

func TestCapture(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c, err := delivery.NewCapture(t.TempDir()+"/mailbox", func() time.Time { now = now.Add(time.Second); return now })
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, to := range []string{"a@example.test", "b@example.test"} {
		res := c.Send(t.Context(), delivery.Envelope{From: "bounce@acme.test", To: []string{to}}, testMessage(t, to))
		requireStatus(t, res, delivery.StatusDelivered)
		if res[0].Code != 250 || res[0].Host != "capture" {
			t.Errorf("result = %v", res[0])
		}
	}

	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("%d captured, want 2", len(list))
	}
	// Newest first.
	if list[0].To[0] != "b@example.test" || list[1].To[0] != "a@example.test" {
		t.Errorf("order = %v, %v", list[0].To, list[1].To)
	}
	m := list[0]
	if m.From != "bounce@acme.test" || m.Subject != "Your receipt" || m.Size == 0 || !m.Time.Equal(now) {
		t.Errorf("captured = %+v", m)
	}
	for _, x := range list {
		ids = append(ids, x.ID)
	}

	raw, err := c.Read(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("Return-Path: <bounce@acme.test>\r\nX-Envelope-To: b@example.test\r\nFrom: ")) {
		t.Errorf("file starts %q", raw[:80])
	}

	if err := c.Delete(ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ids[0]); !errors.Is(err, delivery.ErrNotCaptured) {
		t.Errorf("Read after Delete: %v", err)
	}
	for _, bad := range []string{"../../etc/passwd", "", "x.eml"} {
		if _, err := c.Read(bad); !errors.Is(err, delivery.ErrNotCaptured) {
			t.Errorf("Read(%q) = %v", bad, err)
		}
	}
	if list, _ := c.List(); len(list) != 1 {
		t.Errorf("%d left, want 1", len(list))
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	requireStatus(t, c.Send(ctx, delivery.Envelope{From: "b@acme.test", To: []string{"x@example.test"}}, []byte("x")), delivery.StatusTemporary)
}
