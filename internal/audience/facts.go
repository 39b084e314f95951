package audience

// ContactFacts is what the in-memory evaluator knows about one contact.
// Service.Facts loads it from the database; the workflow engine may build it
// from what it already holds.
type ContactFacts struct {
	ID          string
	Email       string
	FirstName   *string
	LastName    *string
	Notes       *string
	Source      string
	UserGroup   string
	UserID      *string
	Subscribed  bool
	OptInStatus *string
	CreatedAt   int64 // unix ms

	// MailingLists holds the lists the contact is on (for Audience).
	MailingLists map[string]bool

	// Custom holds every custom property of the team by name, typed; a
	// property the contact has no value for is present with nil Str and Num
	// (so its type is known). Property names missing from Custom are
	// unknown to the team and make a filter naming them invalid.
	Custom map[string]Value

	// Did reports whether the contact did action (sent/opened/clicked) on
	// the target (campaign/workflow/workflowEmail) with the id; nil means
	// no activity at all.
	Did func(action, target, id string) bool
}

// Value is a typed custom property value: Str for strings, Num for numbers,
// booleans (0/1) and dates (unix ms), as stored in contact_values.
type Value struct {
	Type string
	Str  *string
	Num  *float64
}

func (c *ContactFacts) builtinString(name string) string {
	var p *string
	switch name {
	case "email":
		return c.Email
	case "source":
		return c.Source
	case "userGroup":
		return c.UserGroup
	case "firstName":
		p = c.FirstName
	case "lastName":
		p = c.LastName
	case "notes":
		p = c.Notes
	case "userId":
		p = c.UserID
	}
	if p == nil {
		return ""
	}
	return *p
}

// Audience is who a campaign goes to (§5.9): optionally the members of one
// mailing list, optionally only subscribed contacts, matching every filter
// (a segment's and the campaign's own filter on top of it).
type Audience struct {
	MailingListID  string
	SubscribedOnly bool
	Filters        []Filter
}
