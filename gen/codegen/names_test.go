package codegen

import "testing"

func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, exp, unexp string }{
		{"api_rl_user", "APIRLUser", "apiRLUser"},
		{"user_id", "UserID", "userID"},
		{"auth.login", "AuthLogin", "authLogin"},
		{"attachments.download_url", "AttachmentsDownloadURL", "attachmentsDownloadURL"},
		{"dns_rrtype", "DNSRRType", "dnsRRType"},
		{"AAAA", "AAAA", "aaaa"},
		{"message-send", "MessageSend", "messageSend"},
		{"key", "Key", "key"},
		{"db0", "DB0", "db0"},
		{"type", "Type", "type_"},
		{"args", "Args", "args_"},
	} {
		if got := exported(tc.in); got != tc.exp {
			t.Errorf("exported(%q) = %q, want %q", tc.in, got, tc.exp)
		}
		if got := unexported(tc.in); got != tc.unexp {
			t.Errorf("unexported(%q) = %q, want %q", tc.in, got, tc.unexp)
		}
	}
}
