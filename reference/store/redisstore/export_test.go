package redisstore

// ScriptHashes returns the SHA1 of every script the store runs, for the spec
// that checks each of them ran (SCRIPT EXISTS).
func ScriptHashes() []string {
	out := make([]string, len(allScripts))
	for i, sc := range allScripts {
		out[i] = sc.Hash()
	}
	return out
}

// Link returns the prelude parts a script body uses (link).
func Link(body string) string { return link(body) }
