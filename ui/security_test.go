package ui_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/ui"
)

// The reviewer's repros (issue 16), on the miniredis lane.
var _ = Describe("the web UI against issue 16's attacks", func() {
	var hs *harness
	BeforeEach(func() { hs = newHarness(lanes[0].url(), ui.Config{}) })

	// addIDs writes a failed entry for each id.
	addIDs := func(ids ...string) {
		GinkgoHelper()
		for i, id := range ids {
			e := entryAt(id, "charge", classify.Medium, classify.Transient, time.Duration(10-i)*time.Minute, `{"amount":1}`, "boom")
			_, err := hs.store.Add(context.Background(), e, time.Now())
			Expect(err).NotTo(HaveOccurred())
		}
	}
	// follow resolves a link or form action of the page at base as a
	// browser does.
	follow := func(base, ref string) string {
		GinkgoHelper()
		b, err := url.Parse("http://" + specHost + base)
		Expect(err).NotTo(HaveOccurred())
		r, err := url.Parse(html.UnescapeString(ref))
		Expect(err).NotTo(HaveOccurred())
		return b.ResolveReference(r).RequestURI()
	}

	Describe("entry IDs in links and form actions", func() {
		tricky := []string{"a/../victim", "z?reveal=1", "x#y", "..", "sp ace%2F"}
		BeforeEach(func() { addIDs(append([]string{"victim"}, tricky...)...) })

		It("links every row of the list to its own entry, whatever its ID holds", func() {
			body := hs.get("/entries").Body.String()
			for _, id := range tricky {
				m := regexp.MustCompile(`<a href="([^"]*)">` + regexp.QuoteMeta(html.EscapeString(id)) + `</a>`).FindStringSubmatch(body)
				Expect(m).NotTo(BeNil(), "a row link for %q", id)
				rec := hs.get(follow("/entries", m[1]))
				Expect(rec.Code).To(Equal(http.StatusOK), "the link for %q: %s", id, m[1])
				Expect(rec.Body.String()).To(ContainSubstring(`<code id="entry-id">`+html.EscapeString(id)+`</code>`), "the link for %q", id)
				Expect(rec.Body.String()).To(ContainSubstring("(secrets masked)"), "the link for %q reveals nothing", id)
			}
		})

		It("makes the Delete button of entry a/../victim delete that entry, not victim", func() {
			page := "/entries/" + url.PathEscape("a/../victim")
			rec := hs.get(page)
			Expect(rec.Code).To(Equal(http.StatusOK))
			body := rec.Body.String()
			m := regexp.MustCompile(`action="([^"]*/delete)"`).FindStringSubmatch(body)
			Expect(m).NotTo(BeNil())
			tok := csrfRE.FindStringSubmatch(body)[1]
			rec = hs.postForm(follow(page, m[1]), url.Values{"csrf": {tok}})
			Expect(rec.Code).To(Equal(http.StatusSeeOther))
			Expect(hs.status("victim")).To(Equal("failed"))
			Expect(hs.status("a/../victim")).To(Equal("deleted"))
			// The redirect lands on the same entry.
			rec = hs.get(follow(page, rec.Header().Get("Location")))
			Expect(rec.Body.String()).To(ContainSubstring(`<code id="entry-id">a/../victim</code>`))
		})

		It("escapes the ID in every form action of the entry page", func() {
			for _, id := range tricky {
				page := "/entries/" + url.PathEscape(id)
				if id == ".." {
					page = "/entries/%2E%2E"
				}
				rec := hs.get(page)
				Expect(rec.Code).To(Equal(http.StatusOK), id)
				for _, m := range regexp.MustCompile(`action="(/entries/[^"]*)"`).FindAllStringSubmatch(rec.Body.String(), -1) {
					u, err := url.Parse(follow(page, m[1]))
					Expect(err).NotTo(HaveOccurred())
					Expect(u.RawQuery).To(BeEmpty(), "action %s of %q", m[1], id)
					Expect(u.Fragment).To(BeEmpty(), "action %s of %q", m[1], id)
					seg := regexp.MustCompile(`^/entries/([^/]+)/[a-z]+$`).FindStringSubmatch(u.EscapedPath())
					Expect(seg).NotTo(BeNil(), "action %s of %q is /entries/ID/verb", m[1], id)
					got, err := url.PathUnescape(seg[1])
					Expect(err).NotTo(HaveOccurred())
					Expect(got).To(Equal(id))
				}
			}
		})
	})
})
