package delivery

import "testing"

func TestParseReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code     int
		text     string
		enhanced string
		message  string
		status   Status
	}{
		{550, "5.1.1 The email account that you tried to reach does not exist.\n5.1.1 Please try\n5.1.1 double-checking", "5.1.1",
			"The email account that you tried to reach does not exist. Please try double-checking", StatusPermanent},
		{451, "4.7.1 Greylisted", "4.7.1", "Greylisted", StatusTemporary},
		{550, "Requested action not taken: mailbox unavailable", "", "Requested action not taken: mailbox unavailable", StatusPermanent},
		{250, "2.0.0 Ok: queued as 4F2A1", "2.0.0", "Ok: queued as 4F2A1", StatusDelivered},
		{421, "mx.example.test Service not available", "", "mx.example.test Service not available", StatusTemporary},
		{554, "5.7.1", "5.7.1", "", StatusPermanent},
		{354, "go ahead", "", "go ahead", StatusTemporary},
		{550, "1.2.3 not enhanced", "", "1.2.3 not enhanced", StatusPermanent},
	}
	for _, tt := range tests {
		p := parseReply(tt.code, tt.text)
		if p.enhanced != tt.enhanced || p.message != tt.message || p.status() != tt.status {
			t.Errorf("parseReply(%d, %q) = %q %q %v", tt.code, tt.text, p.enhanced, p.message, p.status())
		}
	}
	if (Result{}).Status != StatusTemporary {
		t.Error("zero Result must be temporary")
	}
}
