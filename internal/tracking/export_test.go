package tracking

// RewriteTokenized is Rewrite always driven by the x/net/html tokenizer,
// for tests that compare it with the scanner.
func RewriteTokenized(src []byte, base, sendID string, s *Signer) []byte {
	return newRewriter(base, sendID, s).tokenize(nil, src)
}
