package redact_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/redact"
)

// briefPayload is a job payload with a card, a token, a nested
// Authorization header, a number and a note; each call builds a fresh copy.
func briefPayload() map[string]any {
	return map[string]any{
		"card":    "4242 4242 4242 4242",
		"token":   "abc",
		"headers": map[string]any{"Authorization": "Bearer xyz"},
		"amount":  100,
		"note":    "password=hunter2",
	}
}

// panicky is a fmt.Stringer whose String panics.
type panicky struct{}

func (panicky) String() string { panic("boom") }

// account is a struct a caller might put in a payload.
type account struct {
	User     string
	Password string
	Webhook  redact.SecretURL
	internal string
}

var _ = Describe("Fields", func() {
	var r *redact.Redactor
	BeforeEach(func() { r = redact.Default() })

	It("masks sensitive keys and secrets in strings, in a copy", func() {
		in := briefPayload()
		Expect(r.Fields(in)).To(Equal(map[string]any{
			"card":    "[CARD ****4242]",
			"token":   "[REDACTED]",
			"headers": map[string]any{"Authorization": "Bearer [REDACTED]"},
			"amount":  100,
			"note":    "password=[REDACTED]",
		}))
		Expect(in).To(Equal(briefPayload()), "the input is unchanged")
	})

	It("returns a copy that shares nothing with the input", func() {
		in := map[string]any{"nested": map[string]any{"a": "x"}, "list": []any{"y"}, "strs": []string{"z"}}
		out := r.Fields(in)
		out["nested"].(map[string]any)["a"] = "changed"
		out["list"].([]any)[0] = "changed"
		out["strs"].([]string)[0] = "changed"
		Expect(in).To(Equal(map[string]any{"nested": map[string]any{"a": "x"}, "list": []any{"y"}, "strs": []string{"z"}}))
	})

	It("finds a card in a nested field and in a []any", func() {
		in := map[string]any{
			"payment": map[string]any{"method": map[string]any{"number": "4242 4242 4242 4242"}},
			"items":   []any{"ok", "4242 4242 4242 4242", 3, []any{"4242 4242 4242 4242"}},
		}
		Expect(r.Fields(in)).To(Equal(map[string]any{
			"payment": map[string]any{"method": map[string]any{"number": "[CARD ****4242]"}},
			"items":   []any{"ok", "[CARD ****4242]", 3, []any{"[CARD ****4242]"}},
		}))
	})

	It("masks card numbers that arrive as JSON numbers, and no other number", func() {
		var in map[string]any
		Expect(json.Unmarshal([]byte(`{"pan": 4242424242424242, "order": 1234567890123, "amount": 12.5}`), &in)).To(Succeed())
		Expect(r.Fields(in)).To(Equal(map[string]any{"pan": "[CARD ****4242]", "order": float64(1234567890123), "amount": 12.5}))

		Expect(r.Fields(map[string]any{"n": json.Number("4111111111111111"), "i": int64(4000000000000000006), "u": uint64(7)})).
			To(Equal(map[string]any{"n": "[CARD ****1111]", "i": "[CARD ****0006]", "u": uint64(7)}))
	})

	DescribeTable("matches keys ignoring case, '-', '_' and spaces, and by fragment",
		func(key string, masked bool) {
			out := r.Fields(map[string]any{key: "v"})
			if masked {
				Expect(out).To(HaveKeyWithValue(key, "[REDACTED]"))
			} else {
				Expect(out).To(HaveKeyWithValue(key, "v"))
			}
		},
		Entry(nil, "api_key", true), Entry(nil, "API-Key", true), Entry(nil, "apikey", true), Entry(nil, "Api Key", true),
		Entry(nil, "X-Api-Key", true), Entry(nil, "stripe_secret_key", true), Entry(nil, "github_token", true),
		Entry(nil, "DB_PASSWORD", true), Entry(nil, "Set-Cookie", true), Entry(nil, "CVV2", true), Entry(nil, "webhook_url", true),
		Entry(nil, "author", false), Entry(nil, "spin", false), Entry(nil, "session_count", false), Entry(nil, "amount", false),
	)

	It("keeps nil and empty values of sensitive keys, and masks anything else they hold", func() {
		Expect(r.Fields(map[string]any{
			"password": nil, "token": "", "secret": map[string]any{"a": "b"}, "pin": 1234, "cvv": []any{"1"},
		})).To(Equal(map[string]any{
			"password": nil, "token": "", "secret": "[REDACTED]", "pin": "[REDACTED]", "cvv": "[REDACTED]",
		}))
	})

	It("keeps the types of string maps and lists", func() {
		in := map[string]any{
			"labels": map[string]string{"env": "prod", "api_key": "k", "note": "token: abc"},
			"multi":  map[string][]string{"session": {"a", "b"}, "tags": {"x"}},
			"query":  url.Values{"access_token": {"t"}, "q": {"4242424242424242"}},
			"header": http.Header{"Authorization": {"Basic dXNlcjpwYXNz"}},
			"rows":   []map[string]any{{"secret": "s"}, nil},
		}
		Expect(r.Fields(in)).To(Equal(map[string]any{
			"labels": map[string]string{"env": "prod", "api_key": "[REDACTED]", "note": "token: [REDACTED]"},
			"multi":  map[string][]string{"session": {"[REDACTED]", "[REDACTED]"}, "tags": {"x"}},
			"query":  url.Values{"access_token": {"[REDACTED]"}, "q": {"[CARD ****4242]"}},
			"header": http.Header{"Authorization": {"Basic [REDACTED]"}},
			"rows":   []map[string]any{{"secret": "[REDACTED]"}, nil},
		}))
	})

	It("renders other values as JSON-like data, redacted", func() {
		hook, err := redact.NewSecretURL("https://hooks.slack.com/services/T0/B0/XYZ")
		Expect(err).NotTo(HaveOccurred())
		in := map[string]any{
			"err":     errors.New("dial: password=hunter2"),
			"account": account{User: "bob", Password: "hunter2", Webhook: hook, internal: "x"},
			"ptr":     &account{User: "amy"},
			"ints":    []int{1, 2},
			"bytes":   []byte("token: abc"),
			"weird":   panicky{},
			"fn":      func() {},
			"nilptr":  (*account)(nil),
		}
		Expect(r.Fields(in)).To(Equal(map[string]any{
			"err":     "dial: password=[REDACTED]",
			"account": map[string]any{"User": "bob", "Password": "[REDACTED]", "Webhook": "https://hooks.slack.com/services/****"},
			"ptr":     map[string]any{"User": "amy", "Password": "", "Webhook": ""},
			"ints":    []any{1, 2},
			"bytes":   "token: [REDACTED]",
			"weird":   "[REDACTED]",
			"fn":      "[REDACTED]",
			"nilptr":  nil,
		}))
	})

	It("stops at MaxDepth, even on a cycle", func() {
		cyclic := map[string]any{}
		cyclic["n"] = cyclic
		out := r.Fields(cyclic)
		for range redact.MaxDepth {
			Expect(out).To(HaveKey("n"))
			out = out["n"].(map[string]any)
		}
		Expect(out).To(Equal(map[string]any{"n": "[REDACTED]"}))
	})

	It("survives values no JSON decoder produces", func() {
		type node struct {
			Name string
			Next *node
		}
		loop := &node{Name: "a"}
		loop.Next = loop
		selfSlice := []any{nil}
		selfSlice[0] = selfSlice
		var iface any = &loop

		out := r.Fields(map[string]any{
			"loop": loop, "slice": selfSlice, "iface": &iface, "ch": make(chan int), "c": complex(1, 2),
			"intKeys": map[int]any{4: "password=x"}, "array": [2]string{"token: t", "ok"}, "nilIface": (*any)(nil),
		})
		Expect(out).To(HaveKeyWithValue("intKeys", map[string]any{"4": "password=[REDACTED]"}))
		Expect(out).To(HaveKeyWithValue("array", []any{"token: [REDACTED]", "ok"}))
		Expect(out).To(HaveKeyWithValue("ch", "[REDACTED]"))
		Expect(out).To(HaveKeyWithValue("c", "[REDACTED]"))
		Expect(out).To(HaveKeyWithValue("nilIface", BeNil()))

		depth := 0
		for v := out["loop"]; ; depth++ {
			m, ok := v.(map[string]any)
			if !ok {
				Expect(v).To(Equal("[REDACTED]"))
				break
			}
			if depth < redact.MaxDepth-1 {
				Expect(m).To(HaveKeyWithValue("Name", "a"), "level %d", depth+1)
			} else {
				Expect(m).To(Equal(map[string]any{"Name": "[REDACTED]", "Next": "[REDACTED]"}), "the fields below MaxDepth")
			}
			v = m["Next"]
		}
		Expect(depth).To(Equal(redact.MaxDepth), "one map per level, down to MaxDepth")
	})

	It("returns nil for nil", func() {
		Expect(r.Fields(nil)).To(BeNil())
	})
})

var _ = Describe("Header", func() {
	var (
		r  *redact.Redactor
		in http.Header
	)
	BeforeEach(func() {
		r = redact.Default()
		in = http.Header{
			"Authorization":       {"Bearer xyz"},
			"Proxy-Authorization": {"Basic dXNlcjpwYXNz"},
			"Cookie":              {"session=abc; csrf=def"},
			"Set-Cookie":          {"sid=1; HttpOnly", "theme=dark"},
			"X-Api-Key":           {"k1"},
			"X-Stripe-Secret":     {"s"},
			"Content-Type":        {"application/json"},
			"X-Debug":             {"password=hunter2"},
			"X-Empty":             nil,
		}
	})

	It("masks the credential headers and redacts the rest, in a copy", func() {
		before := in.Clone()
		out := r.Header(in)
		Expect(out).To(Equal(http.Header{
			"Authorization":       {"Bearer [REDACTED]"},
			"Proxy-Authorization": {"Basic [REDACTED]"},
			"Cookie":              {"[REDACTED]"},
			"Set-Cookie":          {"[REDACTED]", "[REDACTED]"},
			"X-Api-Key":           {"[REDACTED]"},
			"X-Stripe-Secret":     {"[REDACTED]"},
			"Content-Type":        {"application/json"},
			"X-Debug":             {"password=[REDACTED]"},
			"X-Empty":             nil,
		}))
		out["Content-Type"][0] = "changed"
		Expect(in).To(Equal(before), "the input is unchanged")
	})

	It("masks the credential headers even when Config.Keys leaves them out", func() {
		r = newRedactor(redact.Config{Keys: []string{"X-Tenant"}, KeyFragments: []string{}})
		out := r.Header(http.Header{"Authorization": {"Bearer xyz"}, "X-Api-Key": {"k"}, "X-Tenant": {"t"}, "X-Secret": {"s"}})
		Expect(out).To(Equal(http.Header{"Authorization": {"Bearer [REDACTED]"}, "X-Api-Key": {"[REDACTED]"}, "X-Tenant": {"[REDACTED]"}, "X-Secret": {"s"}}))
	})

	It("returns nil for nil", func() {
		Expect(r.Header(nil)).To(BeNil())
	})
})
