package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lasso-mail/lasso/internal/app"
	"github.com/lasso-mail/lasso/internal/ids"
	"github.com/lasso-mail/lasso/internal/testclock"
	"github.com/lasso-mail/lasso/internal/testdb"
	"github.com/lasso-mail/lasso/internal/workflows"
)

// rows splits command output into lines of fields, dropping the header.
func rows(out string) [][]string {
	var rs [][]string
	for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if i > 0 {
			rs = append(rs, strings.Fields(l))
		}
	}
	return rs
}

// TestWorkflowsCLI runs a server (in process) whose workflow has real runs
// and uses the workflows commands on the same database.
func TestWorkflowsCLI(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		ctx := context.Background()
		dir := t.TempDir()
		t0 := time.Now().UTC().Truncate(time.Millisecond)
		clock := testclock.New(t0)
		a, err := app.Open(ctx, app.Config{DatabaseURL: dbURL, DataDir: dir, RateLimit: -1, Now: clock.Now, WorkflowTimerPoll: 50 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Queue.Start(ctx); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.Handler())
		t.Cleanup(func() {
			srv.Close()
			_ = a.Queue.Stop(ctx)
			a.Close()
		})
		team, err := a.Accounts.EnsureTeam(ctx, "CLI team")
		if err != nil {
			t.Fatal(err)
		}
		key, _, err := a.Accounts.CreateKey(ctx, team.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		api := func(method, path string, body any) map[string]any {
			t.Helper()
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != 200 {
				t.Fatalf("%s %s: %d %v %v", method, path, res.StatusCode, m, err)
			}
			return m
		}
		db := []string{"--database-url", dbURL, "--data-dir", dir}
		cli := func(args ...string) string {
			t.Helper()
			return lassoCLI(t, append(args, db...)...)
		}
		cliErr := func(want string, args ...string) {
			t.Helper()
			var out, errb bytes.Buffer
			err := run(ctx, append(args, db...), &out, &errb)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("lasso %v: error %v, want %q (out %q)", args, err, want, out.String())
			}
		}

		// EventTrigger "signup" → Timer 2 h → Exit, and a draft with no trigger.
		wf := api("POST", "/api/v1/workflows", map[string]any{"name": "Onboarding"})
		id, root := wf["id"].(string), wf["rootNodeId"].(string)
		wf = api("POST", "/api/v1/workflows/"+id+"/nodes/"+root, map[string]any{"expectedRevisionId": wf["workflowRevisionId"],
			"payload": map[string]any{"typeName": "EventTrigger", "eventName": "signup"}})["workflow"].(map[string]any)
		res := api("POST", "/api/v1/workflows/"+id+"/nodes", map[string]any{"expectedRevisionId": wf["workflowRevisionId"],
			"insertMode": "after", "nodeTypeName": "TimerAction", "fromNodeId": root})
		tid, wf := res["node"].(map[string]any)["id"].(string), res["workflow"].(map[string]any)
		wf = api("POST", "/api/v1/workflows/"+id+"/nodes/"+tid, map[string]any{"expectedRevisionId": wf["workflowRevisionId"],
			"payload": map[string]any{"amount": 2, "unit": "h"}})["workflow"].(map[string]any)
		exitID := wf["nodes"].(map[string]any)[tid].(map[string]any)["nextNodeIds"].([]any)[0].(string)
		draft := api("POST", "/api/v1/workflows", map[string]any{"name": "Drafty"})["id"].(string)

		list := func() map[string][]string {
			t.Helper()
			out := cli("workflows", "list", "--team", "CLI team")
			if !strings.HasPrefix(out, "ID") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "QUEUED") {
				t.Fatalf("workflows list header: %q", out)
			}
			m := map[string][]string{}
			for _, r := range rows(out) {
				m[r[0]] = r[1:]
			}
			return m
		}
		if got := list(); len(got) != 2 || strings.Join(got[id], " ") != "Onboarding Draft 0" || strings.Join(got[draft], " ") != "Drafty Draft 0" {
			t.Fatalf("workflows list: %v", got)
		}

		// Start, then two contacts enter and wait on the timer.
		if out := cli("workflows", "start", "--team", "CLI team", "--id", id); out != "workflow "+id+" (Onboarding) is now Sending\n" {
			t.Fatalf("start: %q", out)
		}
		cliErr("Choose a trigger before starting the workflow.", "workflows", "start", "--team", "CLI team", "--id", draft)
		cliErr("Workflow is already sending.", "workflows", "start", "--team", "CLI team", "--id", id)
		for _, e := range []string{"ann@example.org", "bob@example.org"} {
			api("POST", "/api/v1/events/send", map[string]any{"eventName": "signup", "email": e})
		}
		runsOf := func(what string, ok func([]*workflows.Run) bool) []*workflows.Run {
			t.Helper()
			deadline := time.Now().Add(15 * time.Second)
			for {
				rs, err := a.Engine.Runs(ctx, id, "")
				if err != nil {
					t.Fatal(err)
				}
				if ok(rs) {
					return rs
				}
				if time.Now().After(deadline) {
					t.Fatalf("runs never %s", what)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		runs := runsOf("waiting", func(rs []*workflows.Run) bool {
			return len(rs) == 2 && rs[0].DueAt != nil && rs[1].DueAt != nil
		})
		runOf := map[string]string{}
		for _, r := range runs {
			c, err := a.Contacts.Get(ctx, team.ID, r.ContactID)
			if err != nil {
				t.Fatal(err)
			}
			runOf[c.Email] = r.ID
		}
		if got := list(); strings.Join(got[id], " ") != "Onboarding Sending 2" || strings.Join(got[draft], " ") != "Drafty Draft 0" {
			t.Fatalf("workflows list: %v", got)
		}

		due := t0.Add(2 * time.Hour).Format("2006-01-02T15:04:05.000Z")
		out := cli("workflows", "runs", "--team", "CLI team", "--id", id)
		if h := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(h, " ") != "ID CONTACT STATUS NODE DUE" {
			t.Fatalf("runs header: %q", out)
		}
		rs := rows(out)
		if len(rs) != 2 {
			t.Fatalf("runs: %q", out)
		}
		for _, r := range rs {
			if len(r) != 6 || runOf[r[1]] != r[0] || r[2] != "queued" || r[3] != tid || r[4] != "(TimerAction)" || r[5] != due {
				t.Fatalf("run line %v (runs %v, due %s)", r, runOf, due)
			}
		}
		if rs[0][0] < rs[1][0] {
			t.Fatalf("runs not newest first: %q", out)
		}
		rs = rows(cli("workflows", "runs", "--team", "CLI team", "--id", id, "--email", "ann@example.org"))
		if len(rs) != 1 || rs[0][0] != runOf["ann@example.org"] || rs[0][1] != "ann@example.org" {
			t.Fatalf("runs --email: %v", rs)
		}
		out = cli("workflows", "runs", "--team", "CLI team", "--id", id, "--limit", "1")
		if rs := rows(out); len(rs) != 2 || len(rs[0]) != 6 || !strings.HasSuffix(out, "(1 of 2 runs; --limit 0 shows all)\n") {
			t.Fatalf("runs --limit 1: %q", out)
		}
		if out := cli("workflows", "runs", "--team", "CLI team", "--id", id, "--status", "exited"); !strings.HasSuffix(out, "\n(no runs)\n") {
			t.Fatalf("runs --status exited: %q", out)
		}

		annRun := runOf["ann@example.org"]
		annID := runs[0].ContactID
		if runs[1].ID == annRun {
			annID = runs[1].ContactID
		}
		out = cli("workflows", "run", "--team", "CLI team", "--run", annRun)
		for _, want := range []string{"run:", annRun, "workflow:", id + " (Onboarding)", "contact:", "ann@example.org (" + annID + ")",
			"status:", "queued", "node:", tid + " (TimerAction)", "due:", due, "created:", t0.Format("2006-01-02T15:04:05.000Z")} {
			if !strings.Contains(out, want) {
				t.Fatalf("run lacks %q:\n%s", want, out)
			}
		}
		hist := strings.SplitN(out, "\n\n", 2)
		if len(hist) != 2 {
			t.Fatalf("run without history:\n%s", out)
		}
		steps := rows(hist[1])
		at := t0.Format("2006-01-02T15:04:05.000Z")
		if len(steps) != 2 || strings.Join(steps[0][:4], " ") != at+" "+root+" EventTrigger entered" ||
			strings.Join(steps[1][:4], " ") != at+" "+tid+" TimerAction waiting" {
			t.Fatalf("history:\n%s", hist[1])
		}

		// Pause, pause while queueing, resume.
		status := func() string {
			w, err := a.Workflows.Get(ctx, team.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			return w.Status
		}
		for _, step := range []struct {
			args []string
			want string
		}{{[]string{"pause"}, "Paused"}, {[]string{"pause", "--queueing"}, "PausedAndQueueing"}, {[]string{"resume"}, "Sending"}, {[]string{"pause", "--queueing"}, "PausedAndQueueing"}} {
			out := cli(append([]string{"workflows"}, append(step.args, "--team", "CLI team", "--id", id)...)...)
			if out != "workflow "+id+" (Onboarding) is now "+step.want+"\n" || status() != step.want {
				t.Fatalf("%v: %q, status %s", step.args, out, status())
			}
		}
		cli("workflows", "resume", "--team", "CLI team", "--id", id)
		cliErr("Only a paused workflow can be resumed.", "workflows", "resume", "--team", "CLI team", "--id", id)
		cliErr("Only a sending workflow can be paused.", "workflows", "pause", "--team", "CLI team", "--id", draft)

		// Errors: unknown team, workflow, run, status; another team's workflow and run.
		other, err := a.Accounts.EnsureTeam(ctx, "Other team")
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := a.Workflows.Create(ctx, other.ID, workflows.CreateInput{Name: "Theirs"})
		if err != nil {
			t.Fatal(err)
		}
		cliErr(`Team "Nobody" not found.`, "workflows", "list", "--team", "Nobody")
		cliErr("Workflow not found.", "workflows", "runs", "--team", "CLI team", "--id", ids.New())
		cliErr("Workflow not found.", "workflows", "runs", "--team", "CLI team", "--id", theirs.ID)
		cliErr("Workflow not found.", "workflows", "pause", "--team", "CLI team", "--id", theirs.ID)
		cliErr("Workflow not found.", "workflows", "runs", "--team", "Other team", "--id", id)
		cliErr("Workflow run not found.", "workflows", "run", "--team", "Other team", "--run", annRun)
		cliErr("Workflow run not found.", "workflows", "run", "--team", "CLI team", "--run", ids.New())
		cliErr("Invalid workflow run id.", "workflows", "run", "--team", "CLI team", "--run", "nope")
		cliErr("status must be one of queued, completed, exited, cancelled", "workflows", "runs", "--team", "CLI team", "--id", id, "--status", "done")
		cliErr("--id", "workflows", "runs", "--team", "CLI team")
		if got := list(); len(got) != 2 || got[theirs.ID] != nil {
			t.Fatalf("another team's workflow listed: %v", got)
		}

		// The timer ends: both runs complete at the exit.
		clock.Advance(3 * time.Hour)
		runsOf("completed", func(rs []*workflows.Run) bool {
			return len(rs) == 2 && rs[0].Status == workflows.RunCompleted && rs[1].Status == workflows.RunCompleted
		})
		rs = rows(cli("workflows", "runs", "--team", "CLI team", "--id", id, "--status", "completed"))
		if len(rs) != 2 {
			t.Fatalf("completed runs: %v", rs)
		}
		for _, r := range rs {
			if len(r) != 6 || r[2] != "completed" || r[3] != exitID || r[4] != "(ExitAction)" || r[5] != "-" {
				t.Fatalf("completed run line %v", r)
			}
		}
		out = cli("workflows", "run", "--team", "CLI team", "--run", annRun)
		steps = rows(strings.SplitN(out, "\n\n", 2)[1])
		last := steps[len(steps)-1]
		if len(steps) != 4 || strings.Join(last[:4], " ") != t0.Add(3*time.Hour).Format("2006-01-02T15:04:05.000Z")+" "+exitID+" ExitAction completed" {
			t.Fatalf("history after the timer:\n%s", out)
		}
		if got := list(); strings.Join(got[id], " ") != "Onboarding Sending 0" {
			t.Fatalf("workflows list: %v", got)
		}

		// The binary exits non-zero with the message on stderr.
		argv, _ := json.Marshal(append([]string{"workflows", "runs", "--team", "CLI team", "--id", theirs.ID}, db...))
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "LASSO_TEST_RUN_ARGS="+string(argv))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "Workflow not found.") {
			t.Fatalf("exit: %v, stderr %q", err, stderr.String())
		}
	})
}
