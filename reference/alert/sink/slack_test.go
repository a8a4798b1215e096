package sink_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"pgregory.net/rapid"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/alert/sink"
	"github.com/faultline/faultline/reference/alert/sink/sinktest"
)

// slackText is a Block Kit text object.
type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// slackBlock is the part of a Block Kit block the specs look at.
type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text"`
	Fields   []slackText `json:"fields"`
	Elements []slackText `json:"elements"`
}

// slackBody is the webhook message as Slack receives it.
type slackBody struct {
	Channel   string       `json:"channel"`
	Username  string       `json:"username"`
	IconEmoji string       `json:"icon_emoji"`
	Text      string       `json:"text"`
	Blocks    []slackBlock `json:"blocks"`
}

// decodeSlack decodes a message Slack received.
func decodeSlack(b []byte) slackBody {
	GinkgoHelper()
	var m slackBody
	Expect(json.Unmarshal(b, &m)).To(Succeed())
	return m
}

// manyAlerts returns a firing notification of n alerts.
func manyAlerts(n int) alert.Notification {
	note := sinktest.Notification()
	base := note.Alerts[0]
	note.Alerts = nil
	for i := range n {
		a := base
		a.Fingerprint = fmt.Sprintf("fp-%02d", i)
		a.Labels = alert.Labels{alert.LabelTask: fmt.Sprintf("task-%02d", i), alert.LabelDependency: "payment-gateway"}
		note.Alerts = append(note.Alerts, a)
	}
	return note
}

// resolved returns n with every alert resolved.
func resolved(n alert.Notification) alert.Notification {
	n.Alerts = append([]alert.Alert(nil), n.Alerts...)
	for i := range n.Alerts {
		n.Alerts[i].Status = alert.Resolved
		n.Alerts[i].ResolvedAt = n.Alerts[i].LastSeen.Add(time.Minute)
	}
	return n
}

var _ = Describe("Slack", func() {
	var (
		rec *recorder
		s   *sink.Slack
	)

	BeforeEach(func() {
		rec = newRecorder()
		var err error
		s, err = sink.NewSlack(sink.SlackConfig{URL: rec.url, Channel: "#payments", Username: "faultline", IconEmoji: ":rotating_light:"})
		Expect(err).NotTo(HaveOccurred())
	})

	// send delivers n and returns the bytes Slack received.
	send := func(n alert.Notification) []byte {
		GinkgoHelper()
		Expect(s.Send(ctx(), n)).To(Succeed())
		return rec.body()
	}

	Describe("the message", func() {
		It("has a fallback text naming status, severity, dependency and alerts", func() {
			m := decodeSlack(send(sinktest.Notification()))
			Expect(m.Text).To(Equal("[FIRING:2] high — payment-gateway: 2 alerts (charge critical, auth transient)"))
			Expect(m.Channel).To(Equal("#payments"))
			Expect(m.Username).To(Equal("faultline"))
			Expect(m.IconEmoji).To(Equal(":rotating_light:"))
		})

		It("opens with a header giving status and severity", func() {
			m := decodeSlack(send(sinktest.Notification()))
			Expect(m.Blocks[0].Type).To(Equal("header"))
			Expect(m.Blocks[0].Text.Type).To(Equal("plain_text"))
			Expect(m.Blocks[0].Text.Text).To(Equal(":rotating_light: FIRING:2 · high · payment-gateway"))
		})

		It("gives every alert its fields, with max attempts over its jobs", func() {
			m := decodeSlack(send(sinktest.Notification()))
			var sections []slackBlock
			for _, b := range m.Blocks {
				if b.Type == "section" {
					sections = append(sections, b)
				}
			}
			Expect(sections).To(HaveLen(2))
			Expect(sections[0].Text.Text).To(ContainSubstring("FIRING"))
			Expect(sections[0].Text.Text).To(ContainSubstring("charge failed: authentication failed"))
			Expect(sections[0].Text.Text).To(ContainSubstring("`source=worker`"), "extra labels")
			var fields []string
			for _, f := range sections[0].Fields {
				fields = append(fields, f.Text)
			}
			Expect(fields).To(Equal([]string{
				"*Severity*\nhigh",
				"*Task*\ncharge",
				"*Class*\ncritical",
				"*Attempts*\n5",
				"*Dependency*\npayment-gateway",
				"*Dedup key*\n`fp-charge-critical`",
				"*Count*\n3",
				"*First seen*\n2026-03-01T12:00:00Z",
				"*Last seen*\n2026-03-01T12:02:00Z",
			}))
			Expect(sections[1].Fields[3].Text).To(Equal("*Attempts*\n-"), "no jobs, no attempts")
		})

		It("summarises the jobs: id, attempts, class and error", func() {
			text := allText(send(sinktest.Notification()))
			Expect(text).To(ContainSubstring("Job `job-1` · 5 attempts · critical: http 401 Unauthorized: invalid api key"))
			Expect(text).To(ContainSubstring("Job `job-2` · 2 attempts · critical: http 401 Unauthorized"))
		})

		It("shows at most 3 jobs per alert", func() {
			n := sinktest.Notification()
			for i := range 5 {
				n.Alerts[0].Jobs = append(n.Alerts[0].Jobs, alert.JobRef{ID: fmt.Sprintf("extra-%d", i), Attempts: 1})
			}
			text := allText(send(n))
			Expect(text).To(ContainSubstring("extra-0"))
			Expect(text).NotTo(ContainSubstring("extra-1"))
			Expect(text).To(ContainSubstring("+4 more jobs"))
		})

		It("ends with the group key, notification ID and how many still fire", func() {
			m := decodeSlack(send(sinktest.Notification()))
			last := m.Blocks[len(m.Blocks)-1]
			Expect(last.Type).To(Equal("context"))
			Expect(last.Elements[0].Text).To(Equal("Group `{dependency=\"payment-gateway\"}` · notification 42 · 1 still firing"))
		})

		It("says resolved for a resolved notification", func() {
			body := send(resolved(sinktest.Notification()))
			m := decodeSlack(body)
			Expect(m.Text).To(HavePrefix("[RESOLVED:2] high — payment-gateway"))
			Expect(m.Blocks[0].Text.Text).To(HavePrefix(":white_check_mark: RESOLVED:2"))
			text := allText(body)
			Expect(text).To(ContainSubstring("*:large_green_circle: RESOLVED*"))
			Expect(text).To(ContainSubstring("*Resolved at*\n2026-03-01T12:03:00Z"))
			Expect(text).NotTo(ContainSubstring("FIRING"))
		})

		It("caps the alerts at 10 and counts the rest", func() {
			body := send(manyAlerts(25))
			m := decodeSlack(body)
			text := allText(body)
			Expect(text).To(ContainSubstring("task-09"))
			Expect(text).NotTo(ContainSubstring("task-10"))
			Expect(text).To(ContainSubstring("and 15 more alerts"))
			Expect(len(m.Blocks)).To(BeNumerically("<=", 50))
			Expect(m.Text).To(HaveSuffix("25 alerts (task-00 critical, task-01 critical, task-02 critical, +22 more)"))
		})

		It("truncates long error texts to 200 characters", func() {
			n := sinktest.Notification()
			n.Alerts[0].Jobs[0].Error = strings.Repeat("x", 150) + strings.Repeat("y", 1000)
			text := allText(send(n))
			Expect(text).To(ContainSubstring(strings.Repeat("x", 150) + strings.Repeat("y", 49) + "…"))
			Expect(text).NotTo(ContainSubstring(strings.Repeat("y", 50)))
		})

		It("keeps every text within Slack's limits", func() {
			n := manyAlerts(10)
			for i := range n.Alerts {
				n.Alerts[i].Summary = strings.Repeat("summary & <more> ", 1000)
				n.Alerts[i].Labels["extra"] = strings.Repeat("ü", 5000)
			}
			n.GroupKey = strings.Repeat("g", 5000)
			m := decodeSlack(send(n))
			Expect(len(m.Blocks)).To(BeNumerically("<=", 50))
			Expect(utf8.RuneCountInString(m.Blocks[0].Text.Text)).To(BeNumerically("<=", 150))
			for _, t := range texts(must(json.Marshal(m))) {
				Expect(utf8.RuneCountInString(t)).To(BeNumerically("<=", 3000))
				Expect(utf8.ValidString(t)).To(BeTrue())
			}
		})

		It("escapes text so a job cannot mention @channel or forge a link", func() {
			n := sinktest.Notification()
			n.Alerts[0].Summary = "<!channel> look"
			n.Alerts[0].Jobs[0].Error = "<https://evil.example|click> & co"
			body := send(n)
			text := allText(body)
			Expect(text).NotTo(ContainSubstring("<!channel>"))
			Expect(text).NotTo(ContainSubstring("<https://evil"))
			Expect(text).To(ContainSubstring("&lt;!channel&gt; look"))
			Expect(text).To(ContainSubstring("&lt;https://evil.example|click&gt; &amp; co"))
		})

		It("is byte-identical for the same notification, whatever the map order", func() {
			n := sinktest.Notification()
			for i := range 30 {
				n.Alerts[0].Labels[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
			}
			first := send(n)
			for range 5 {
				Expect(send(n)).To(Equal(first))
			}
			Expect(string(first)).To(ContainSubstring("`k00=0` `k01=1` `k02=2`"))
		})
	})

	It("stays within Slack's limits for any text (property)", func() {
		rapid.Check(GinkgoT(), func(t *rapid.T) {
			n := sinktest.Notification()
			str := rapid.String()
			n.Alerts[0].Summary = str.Draw(t, "summary")
			n.Alerts[0].Name = str.Draw(t, "name")
			n.Alerts[0].Fingerprint = str.Draw(t, "fingerprint")
			n.Alerts[0].Labels[alert.LabelTask] = str.Draw(t, "task")
			n.Alerts[0].Labels[str.Draw(t, "key")] = str.Draw(t, "value")
			n.Alerts[0].Jobs[0].Error = rapid.StringN(0, 5000, -1).Draw(t, "error")
			n.GroupKey = rapid.StringN(0, 5000, -1).Draw(t, "group")
			body, err := json.Marshal(s.Message(n))
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			var m slackBody
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if utf8.RuneCountInString(m.Blocks[0].Text.Text) > 150 {
				t.Fatalf("header too long")
			}
			for _, b := range m.Blocks {
				if b.Type == "section" && len(b.Fields) > 10 {
					t.Fatalf("%d fields", len(b.Fields))
				}
				if b.Text != nil && b.Text.Text == "" {
					t.Fatalf("empty %s text", b.Type)
				}
				for _, f := range b.Fields {
					if utf8.RuneCountInString(f.Text) > 2000 || f.Text == "" {
						t.Fatalf("field of %d characters", utf8.RuneCountInString(f.Text))
					}
				}
			}
			all := []string{m.Text}
			for _, b := range m.Blocks {
				if b.Text != nil {
					all = append(all, b.Text.Text)
				}
				for _, e := range b.Elements {
					all = append(all, e.Text)
				}
			}
			for _, text := range all {
				if utf8.RuneCountInString(text) > 3000 {
					t.Fatalf("text of %d characters", utf8.RuneCountInString(text))
				}
				if strings.ContainsAny(text, "<>") {
					t.Fatalf("unescaped mrkdwn in %q", text)
				}
			}
		})
	})

	Describe("config", func() {
		const secretURL = "https://hooks.slack.com/services/T000/B000/SUPERSECRET"

		DescribeTable("Validate names the bad field and never quotes the URL",
			func(cfg sink.SlackConfig, field string) {
				err := cfg.WithDefaults().Validate()
				var cerr *sink.ConfigError
				Expect(errors.As(err, &cerr)).To(BeTrue())
				Expect(cerr.Field).To(Equal(field))
				sinktest.ExpectNoSecret(err.Error())
				_, err = sink.NewSlack(cfg)
				Expect(errors.As(err, &cerr)).To(BeTrue())
				sinktest.ExpectNoSecret(err.Error())
			},
			Entry("no URL", sink.SlackConfig{}, "URL"),
			Entry("a relative URL", sink.SlackConfig{URL: "/services/T000/B000/SUPERSECRET"}, "URL"),
			Entry("another scheme", sink.SlackConfig{URL: "ftp://hooks.slack.com/SUPERSECRET"}, "URL"),
			Entry("no host", sink.SlackConfig{URL: "https:///services/SUPERSECRET"}, "URL"),
			Entry("an unparsable URL", sink.SlackConfig{URL: "https://hooks.slack.com/%zzSUPERSECRET"}, "URL"),
			Entry("a control character", sink.SlackConfig{URL: "https://hooks.slack.com/\x7fSUPERSECRET"}, "URL"),
			Entry("a negative timeout", sink.SlackConfig{URL: secretURL, Timeout: -time.Second}, "Timeout"),
		)

		It("defaults the timeout to the client's, else 10s", func() {
			Expect(sink.SlackConfig{}.WithDefaults().Timeout).To(Equal(sink.DefaultTimeout))
			Expect(sink.DefaultTimeout).To(Equal(10 * time.Second))
			c := &http.Client{Timeout: 30 * time.Second}
			Expect(sink.SlackConfig{Client: c}.WithDefaults().Timeout).To(Equal(30 * time.Second))
			Expect(sink.SlackConfig{Client: c, Timeout: time.Second}.WithDefaults().Timeout).To(Equal(time.Second))
		})

		It("prints the URL redacted, whatever the verb", func() {
			cfg := sink.SlackConfig{URL: secretURL}
			s, err := sink.NewSlack(cfg)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.String()).To(Equal("slack sink https://hooks.slack.com/services/****"))
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x"} {
				sinktest.ExpectNoSecret(fmt.Sprintf(verb, s))
				sinktest.ExpectNoSecret(fmt.Sprintf(verb, *s))
				sinktest.ExpectNoSecret(fmt.Sprintf(verb, cfg))
			}
			Expect(fmt.Sprint(cfg)).To(ContainSubstring("https://hooks.slack.com/services/****"))
		})

		DescribeTable("redacts to scheme://host/ and the first path segment",
			func(url, want string) {
				s, err := sink.NewSlack(sink.SlackConfig{URL: url})
				Expect(err).NotTo(HaveOccurred())
				Expect(s.String()).To(Equal("slack sink " + want))
			},
			Entry("a Slack URL", secretURL, "https://hooks.slack.com/services/****"),
			Entry("one segment, itself the secret", "https://example.com/SUPERSECRET", "https://example.com/****"),
			Entry("a query", "http://example.com:8080/hooks/x?token=SUPERSECRET", "http://example.com:8080/hooks/****"),
			Entry("user info", "https://user:SUPERSECRET@example.com/hooks/x", "https://example.com/hooks/****"),
		)

		It("uses a copy of the client given, never modifying it", func() {
			var calls atomic.Int32
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				calls.Add(1)
				return http.DefaultTransport.RoundTrip(r)
			})
			client := &http.Client{Transport: base}
			s, err := sink.NewSlack(sink.SlackConfig{URL: rec.url, Client: client})
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Send(ctx(), sinktest.Notification())).To(Succeed())
			rec.body()
			Expect(calls.Load()).To(BeEquivalentTo(1))
			Expect(client.Timeout).To(BeZero())
			Expect(client.Transport).To(BeAssignableToTypeOf(base))
		})
	})
})

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// must returns v, failing the spec on err.
func must[T any](v T, err error) T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return v
}
