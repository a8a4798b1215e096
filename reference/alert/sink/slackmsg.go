package sink

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/faultline/faultline/reference/alert"
	"github.com/faultline/faultline/reference/classify"
)

// Limits of a Slack message built by Message. With them a message has at
// most 1 + 3×SlackMaxAlerts + 2 = 33 blocks, under Slack's 50.
const (
	// SlackMaxAlerts is the most alerts shown one by one; the rest are
	// counted in an "and N more alerts" line.
	SlackMaxAlerts = 10
	// SlackMaxJobs is the most jobs shown per alert.
	SlackMaxJobs = 3
	// SlackMaxErrorText is the most characters of a job's error shown.
	SlackMaxErrorText = 200
)

// Slack's own limits, in characters; texts are cut in bytes, which never
// count fewer.
const (
	slackMaxText   = 3000 // a section's or context element's text, the fallback
	slackMaxField  = 2000 // a section field
	slackMaxHeader = 150  // a header's plain text
	slackMaxLine   = 1000 // a summary or labels line within a section
)

// fallbackAlerts is how many alerts the fallback text names.
const fallbackAlerts = 3

// shownLabels are the labels that have their own field, left out of the
// labels line.
var shownLabels = []string{alert.LabelAlertName, alert.LabelTask, alert.LabelClass, alert.LabelDependency, alert.LabelSeverity}

// Message returns the webhook message Send posts for n: a plain-text
// fallback for notifications and clients without blocks, then a header with
// the status and severity, a section and a job summary per alert (at most
// SlackMaxAlerts), and a context line with the group, notification and how
// many alerts still fire. The same notification always gives the same
// message, byte for byte.
func (s *Slack) Message(n alert.Notification) *slack.WebhookMessage {
	blocks := []slack.Block{headerBlock(&n)}
	shown := n.Alerts[:min(len(n.Alerts), SlackMaxAlerts)]
	for i := range shown {
		a := &shown[i]
		blocks = append(blocks, slack.NewDividerBlock(), alertSection(a))
		if b := jobsBlock(a); b != nil {
			blocks = append(blocks, b)
		}
	}
	if more := len(n.Alerts) - len(shown); more > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf("and %d more %s", more, plural(more, "alert"))))
	}
	blocks = append(blocks, contextBlock(fmt.Sprintf("Group %s · notification %d · %d still firing",
		code(n.GroupKey), n.ID, n.StillFiring)))
	return &slack.WebhookMessage{
		Channel:   s.channel,
		Username:  s.username,
		IconEmoji: s.iconEmoji,
		Text:      fallbackText(&n),
		Blocks:    &slack.Blocks{BlockSet: blocks},
	}
}

// fallbackText is the message's plain text, shown in notifications, e.g.
// "[FIRING:2] high — payment-gateway: 2 alerts (charge critical, auth
// transient)".
func fallbackText(n *alert.Notification) string {
	items := make([]string, 0, fallbackAlerts+1)
	for i := range n.Alerts[:min(len(n.Alerts), fallbackAlerts)] {
		items = append(items, alertItem(&n.Alerts[i]))
	}
	if more := len(n.Alerts) - len(items); more > 0 {
		items = append(items, fmt.Sprintf("+%d more", more))
	}
	s := fmt.Sprintf("[%s:%d] %s — %s: %d %s", strings.ToUpper(n.Status().String()), statusCount(n),
		n.Severity(), title(n), len(n.Alerts), plural(len(n.Alerts), "alert"))
	if len(items) > 0 {
		s += " (" + strings.Join(items, ", ") + ")"
	}
	return cut(escape(s), slackMaxText)
}

// headerBlock shows the status and severity, e.g. ":rotating_light: FIRING:2
// · high · payment-gateway".
func headerBlock(n *alert.Notification) slack.Block {
	emoji := ":rotating_light:"
	if n.Status() == alert.Resolved {
		emoji = ":white_check_mark:"
	}
	text := fmt.Sprintf("%s %s:%d · %s · %s", emoji, strings.ToUpper(n.Status().String()), statusCount(n),
		n.Severity(), title(n))
	return slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cut(text, slackMaxHeader), true, false))
}

// alertSection shows one alert: its status, name, summary and extra labels,
// and a field each for severity, task, class, attempts, dependency, dedup
// key, count and times.
func alertSection(a *alert.Alert) slack.Block {
	status := "*:red_circle: FIRING*"
	if a.Status == alert.Resolved {
		status = "*:large_green_circle: RESOLVED*"
	}
	lines := []string{status + " " + code(a.Name)}
	if a.Summary != "" {
		lines = append(lines, cut(escape(a.Summary), slackMaxLine))
	}
	var extra []string
	for _, k := range a.Labels.Keys() {
		if !slices.Contains(shownLabels, k) {
			extra = append(extra, code(k+"="+a.Labels[k]))
		}
	}
	if len(extra) > 0 {
		lines = append(lines, cut("Labels: "+strings.Join(extra, " "), slackMaxLine))
	}
	fields := []*slack.TextBlockObject{
		field("Severity", escape(a.Severity.String())),
		field("Task", escape(alertTask(a))),
		field("Class", escape(alertClass(a))),
		field("Attempts", alertAttempts(a)),
		field("Dependency", escape(a.Labels[alert.LabelDependency])),
		field("Dedup key", code(a.Fingerprint)),
		field("Count", strconv.Itoa(a.Count)),
		field("First seen", timestamp(a.FirstSeen)),
		field("Last seen", timestamp(a.LastSeen)),
	}
	if a.Status == alert.Resolved {
		fields = append(fields, field("Resolved at", timestamp(a.ResolvedAt)))
	}
	text := slack.NewTextBlockObject(slack.MarkdownType, cut(strings.Join(lines, "\n"), slackMaxText), false, false)
	return slack.NewSectionBlock(text, fields, nil)
}

// jobsBlock summarises up to SlackMaxJobs of an alert's jobs, one context
// element each, e.g. "Job `j-1` · 5 attempts · transient: connection
// refused"; nil when the alert has no jobs.
func jobsBlock(a *alert.Alert) slack.Block {
	if len(a.Jobs) == 0 {
		return nil
	}
	var elems []slack.MixedElement
	for _, j := range a.Jobs[:min(len(a.Jobs), SlackMaxJobs)] {
		s := fmt.Sprintf("Job %s · %d %s", code(j.ID), j.Attempts, plural(j.Attempts, "attempt"))
		if j.Class != classify.None {
			s += " · " + escape(j.Class.String())
		}
		if j.Error != "" {
			s += ": " + escape(truncateRunes(j.Error, SlackMaxErrorText))
		}
		elems = append(elems, slack.NewTextBlockObject(slack.MarkdownType, cut(s, slackMaxText), false, false))
	}
	if more := len(a.Jobs) - SlackMaxJobs; more > 0 {
		elems = append(elems, slack.NewTextBlockObject(slack.MarkdownType,
			fmt.Sprintf("+%d more %s", more, plural(more, "job")), false, false))
	}
	return slack.NewContextBlock("", elems...)
}

// contextBlock is a context block of one mrkdwn text.
func contextBlock(text string) slack.Block {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, cut(text, slackMaxText), false, false))
}

// field is a section field: a bold name over a value, already mrkdwn.
func field(name, value string) *slack.TextBlockObject {
	if value == "" {
		value = "-"
	}
	return slack.NewTextBlockObject(slack.MarkdownType, cut("*"+name+"*\n"+value, slackMaxField), false, false)
}

// title names what the notification is about: the dependency, task or alert
// name all its alerts share, else its group key.
func title(n *alert.Notification) string {
	for _, key := range []string{alert.LabelDependency, alert.LabelTask, alert.LabelAlertName} {
		if v := commonLabel(n, key); v != "" {
			return v
		}
	}
	if n.GroupKey != "" {
		return n.GroupKey
	}
	if n.Receiver != "" {
		return n.Receiver
	}
	return "faultline"
}

// commonLabel returns the value of label key when every alert has the same
// non-empty one, else "".
func commonLabel(n *alert.Notification, key string) string {
	if len(n.Alerts) == 0 {
		return ""
	}
	v := n.Alerts[0].Labels[key]
	for i := range n.Alerts[1:] {
		if n.Alerts[i+1].Labels[key] != v {
			return ""
		}
	}
	return v
}

// statusCount is the N of "[FIRING:N]": the firing alerts of a firing
// notification, all alerts of a resolved one.
func statusCount(n *alert.Notification) int {
	if n.Status() == alert.Resolved {
		return len(n.Alerts)
	}
	c := 0
	for i := range n.Alerts {
		if n.Alerts[i].Status == alert.Firing {
			c++
		}
	}
	return c
}

// alertItem names an alert in the fallback text, e.g. "charge critical".
func alertItem(a *alert.Alert) string {
	s := strings.TrimSpace(alertTask(a) + " " + alertClass(a))
	if s == "" {
		s = a.Name
	}
	if s == "" {
		s = a.Fingerprint
	}
	return s
}

// alertTask is the alert's task label, else its first job's task.
func alertTask(a *alert.Alert) string {
	if t := a.Labels[alert.LabelTask]; t != "" {
		return t
	}
	if len(a.Jobs) > 0 {
		return a.Jobs[0].Task
	}
	return ""
}

// alertClass is the alert's class label, else its first job's class.
func alertClass(a *alert.Alert) string {
	if c := a.Labels[alert.LabelClass]; c != "" {
		return c
	}
	if len(a.Jobs) > 0 && a.Jobs[0].Class != classify.None {
		return a.Jobs[0].Class.String()
	}
	return ""
}

// alertAttempts is the most attempts among the alert's jobs, or "" without
// jobs.
func alertAttempts(a *alert.Alert) string {
	if len(a.Jobs) == 0 {
		return ""
	}
	m := 0
	for _, j := range a.Jobs {
		m = max(m, j.Attempts)
	}
	return strconv.Itoa(m)
}

// timestamp formats t as RFC 3339 in UTC, or "" when zero.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// escaper escapes the three characters Slack's mrkdwn gives meaning to.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape returns s escaped for mrkdwn, so that text from a job cannot mention
// @channel or forge a link.
func escape(s string) string { return escaper.Replace(s) }

// code returns s as inline code, escaped, or "" when s is empty.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + escape(strings.ReplaceAll(s, "`", "'")) + "`"
}

// ellipsis marks a cut text.
const ellipsis = "…"

// cut returns s cut to at most limit bytes (so at most limit characters),
// ending in an ellipsis when cut, never inside a rune or an &entity;.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	i := max(limit-len(ellipsis), 0)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	t := s[:i]
	if amp := strings.LastIndexByte(t, '&'); amp >= 0 && len(t)-amp < len("&amp;") && !strings.Contains(t[amp:], ";") {
		t = t[:amp]
	}
	return t + ellipsis
}

// truncateRunes returns s cut to at most n characters, ending in an ellipsis
// when cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n-1 {
			return s[:j] + ellipsis
		}
		i++
	}
	return s
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
