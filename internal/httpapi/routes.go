package httpapi

// routes lists every route of the API (paths relative to the prefixes).
func (a *API) routes() {
	a.handle([]route{
		{"GET", "/api-key", a.apiKey},

		{"POST", "/contacts/create", a.createContact},
		{"PUT", "/contacts/update", a.updateContact},
		{"GET", "/contacts/find", a.findContact},
		{"POST", "/contacts/delete", a.deleteContact},
		{"GET", "/contacts/suppression", a.checkSuppression},
		{"DELETE", "/contacts/suppression", a.removeSuppression},
		{"POST", "/contacts/properties", a.createProperty},
		{"GET", "/contacts/properties", a.listProperties},
		{"GET", "/contacts/customFields", a.listCustomFields},

		{"GET", "/lists", a.listLists},

		{"POST", "/events/send", a.sendEvent},

		{"GET", "/dedicated-sending-ips", a.dedicatedIPs},
	})
}
