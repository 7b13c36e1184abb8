package tests

import "github.com/hanchat/luagen/services/secrets"

// testHMACKey hashes user-controlled values in tests; a real service reads its secret from config.
var testHMACKey, _ = secrets.NewHMACKey([]byte("test-only secret, 32 bytes or more, never in production"))
