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

		{"POST", "/transactional", a.sendTransactional},

		{"GET", "/dedicated-sending-ips", a.dedicatedIPs},

		// Content API (issue 3; handlers in content_*.go).
		{"GET", "/transactional-emails", a.listTransactionalEmails},
		{"POST", "/transactional-emails", a.createTransactionalEmail},
		{"GET", "/transactional-emails/{id}", a.getTransactionalEmail},
		{"POST", "/transactional-emails/{id}", a.updateTransactionalEmail},
		{"POST", "/transactional-emails/{id}/draft", a.ensureTransactionalDraft},
		{"POST", "/transactional-emails/{id}/publish", a.publishTransactionalEmail},
		{"GET", "/transactional-emails/{id}/metrics", a.transactionalMetrics},
		{"GET", "/transactional", a.listPublishedTransactional},
		{"GET", "/email-messages/{id}", a.getEmailMessage},
		{"POST", "/email-messages/{id}", a.updateEmailMessage},
		{"POST", "/email-messages/{id}/preview", a.previewEmailMessage},
		{"GET", "/email-messages/{id}/guardian", a.emailMessageGuardian},
		{"GET", "/themes", a.listThemes},
		{"POST", "/themes", a.createTheme},
		{"GET", "/themes/{id}", a.getTheme},
		{"POST", "/themes/{id}", a.updateTheme},
		{"GET", "/components", a.listComponents},
		{"POST", "/components", a.createComponent},
		{"GET", "/components/{id}", a.getComponent},
		{"POST", "/components/{id}", a.updateComponent},
		{"GET", "/campaign-groups", a.listGroups("campaign")},
		{"POST", "/campaign-groups", a.createGroup("campaign")},
		{"GET", "/campaign-groups/{id}", a.getGroup("campaign")},
		{"POST", "/campaign-groups/{id}", a.updateGroup("campaign")},
		{"GET", "/transactional-groups", a.listGroups("transactional")},
		{"POST", "/transactional-groups", a.createGroup("transactional")},
		{"GET", "/transactional-groups/{id}", a.getGroup("transactional")},
		{"POST", "/transactional-groups/{id}", a.updateGroup("transactional")},
		{"POST", "/uploads", a.createUpload},
		{"POST", "/uploads/{id}/complete", a.completeUpload},

		// Audience segments and event patterns (audience_segments.go, event_patterns.go).
		{"GET", "/audience-segments", a.listAudienceSegments},
		{"POST", "/audience-segments", a.createAudienceSegment},
		{"GET", "/audience-segments/{id}", a.getAudienceSegment},
		{"GET", "/event-patterns", a.listEventPatterns},
		{"GET", "/event-patterns/{id}", a.getEventPattern},
		{"GET", "/event-patterns/by-name/{eventName...}", a.getEventPatternByName},

		// Workflows (issue 5; handlers in workflows.go).
		{"GET", "/workflows", a.listWorkflows},
		{"POST", "/workflows", a.createWorkflow},
		{"GET", "/workflows/{id}", a.getWorkflow},
		{"POST", "/workflows/{id}", a.updateWorkflow},
		{"DELETE", "/workflows/{id}", a.deleteWorkflow},
		{"POST", "/workflows/{id}/mailing-list", a.changeWorkflowList},
		{"POST", "/workflows/{id}/nodes", a.createWorkflowNode},
		{"GET", "/workflows/{id}/nodes/{nodeId}", a.getWorkflowNode},
		{"POST", "/workflows/{id}/nodes/{nodeId}", a.updateWorkflowNode},
		{"DELETE", "/workflows/{id}/nodes/{nodeId}", a.deleteWorkflowNode(false)},
		{"DELETE", "/workflows/{id}/nodes/{nodeId}/recursive", a.deleteWorkflowNode(true)},
		{"POST", "/workflows/{id}/nodes/{nodeId}/add-branch", a.addWorkflowBranch},
		{"POST", "/workflows/{id}/nodes/{nodeId}/reroute", a.rerouteWorkflowNode},
		// Lasso extensions (canonical /api/lasso/…; see workflows.go, workflow_runs.go).
		{"POST", "/lasso/workflows/{id}/start", a.setWorkflowStatus("start")},
		{"POST", "/lasso/workflows/{id}/pause", a.setWorkflowStatus("pause")},
		{"POST", "/lasso/workflows/{id}/resume", a.setWorkflowStatus("resume")},
		{"GET", "/lasso/workflows/{id}/runs", a.listWorkflowRuns},
		{"GET", "/lasso/workflow-runs/{runId}", a.getWorkflowRun},
	})
}
