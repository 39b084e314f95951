package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/lasso-mail/lasso/internal/apperr"
	"github.com/lasso-mail/lasso/internal/audience"
	"github.com/lasso-mail/lasso/internal/content"
	"github.com/lasso-mail/lasso/internal/db"
	"github.com/lasso-mail/lasso/internal/ids"
)

// Node type names (§10.1).
const (
	TypeBlankTrigger           = "BlankTrigger"
	TypeSignupTrigger          = "SignupTrigger"
	TypeContactPropertyTrigger = "ContactPropertyTrigger"
	TypeAddToListTrigger       = "AddToListTrigger"
	TypeEventTrigger           = "EventTrigger"
	TypeAudienceFilter         = "AudienceFilter"
	TypeTimer                  = "TimerAction"
	TypeSendEmail              = "SendEmailAction"
	TypeExit                   = "ExitAction"
	TypeBranch                 = "BranchNode"
	TypeExperiment             = "ExperimentBranchNode"
	TypeVariant                = "VariantNode"
)

// IsTrigger reports whether typ is a trigger type.
func IsTrigger(typ string) bool {
	switch typ {
	case TypeBlankTrigger, TypeSignupTrigger, TypeContactPropertyTrigger, TypeAddToListTrigger, TypeEventTrigger:
		return true
	}
	return false
}

// Node is one node of a workflow graph. Next lists its children in order
// (a BranchNode's filters left to right; an ExperimentBranchNode's
// variants). Payload holds the type's stored settings.
type Node struct {
	ID, WorkflowID, Type string
	Next                 []string
	Payload

	// Derived on load, not stored on the node:
	// Subject is a SendEmailAction's message subject.
	Subject string
	// MailingListID is an AddToListTrigger's list (the workflow's).
	MailingListID *string
	// EventProperties are an EventTrigger's event-pattern properties.
	EventProperties []EventProperty

	saved string // fingerprint as stored; "" for a new node
}

// Payload is the stored settings of a node; which fields mean something
// depends on the node type (§10.1).
type Payload struct {
	// Triggers.
	ContactPropertyQuery *PropertyQuery `json:"contactPropertyQuery,omitempty"`
	EventName            *string        `json:"eventName,omitempty"`
	EventPatternID       *string        `json:"eventPatternId,omitempty"`
	ReEligible           bool           `json:"reEligible,omitempty"`
	// AudienceFilter.
	AudienceFilter    *audience.Filter `json:"audienceFilter,omitempty"`
	AudienceSegmentID *string          `json:"audienceSegmentId,omitempty"`
	AppliesDownstream bool             `json:"appliesDownstream,omitempty"`
	// TimerAction: wait Amount × Unit ("m", "h" or "d"); 0 is immediate.
	Amount int    `json:"amount,omitempty"`
	Unit   string `json:"unit,omitempty"`
	// SendEmailAction.
	EmailMessageID *string `json:"emailMessageId,omitempty"`
	// ExperimentBranchNode: percentage of contacts sent to the non-control
	// variants.
	SamplingRate int `json:"samplingRate,omitempty"`
	// VariantNode.
	IsControl bool `json:"isControl,omitempty"`
}

// PropertyQuery is a ContactPropertyTrigger's condition (§10.5).
type PropertyQuery struct {
	Key string     `json:"key"`
	Is  Comparison `json:"is"`
	Was Comparison `json:"was"`
}

// Comparison is one side of a PropertyQuery.
type Comparison struct {
	Value    any    `json:"value"`
	Operator string `json:"operator"`
}

// EventProperty is a property of an event pattern.
type EventProperty struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Delay is a TimerAction's wait in milliseconds.
func (n *Node) Delay() int64 {
	unit := int64(60_000)
	switch n.Unit {
	case "h":
		unit = 3_600_000
	case "d":
		unit = 86_400_000
	}
	return int64(n.Amount) * unit
}

func (n *Node) fingerprint() string {
	b, _ := json.Marshal(struct {
		T string
		N []string
		P Payload
	}{n.Type, n.Next, n.Payload})
	return string(b)
}

// check verifies the graph rules: the node cap, a single trigger which is
// the root, edges to existing nodes, every node reachable from the root, no
// cycles, VariantNodes only under an ExperimentBranchNode.
func (w *Workflow) check() error {
	if len(w.Nodes) > MaxNodes {
		return apperr.New(apperr.Invalid, "A workflow cannot have more than %d nodes.", MaxNodes)
	}
	root := w.Nodes[w.RootNodeID]
	if root == nil || !IsTrigger(root.Type) {
		return apperr.New(apperr.Invalid, "The workflow's root must be its trigger.")
	}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string) error
	visit = func(id string) error {
		switch state[id] {
		case 1:
			return apperr.New(apperr.Invalid, "This change would create a loop in the workflow.")
		case 2:
			return nil
		}
		state[id] = 1
		n := w.Nodes[id]
		for _, c := range n.Next {
			cn := w.Nodes[c]
			if cn == nil {
				return apperr.New(apperr.Invalid, "Node %s points to a missing node.", id)
			}
			if IsTrigger(cn.Type) {
				return apperr.New(apperr.Invalid, "A trigger cannot have incoming connections.")
			}
			if cn.Type == TypeVariant && n.Type != TypeExperiment {
				return apperr.New(apperr.Invalid, "A VariantNode must sit directly under an ExperimentBranchNode.")
			}
			if err := visit(c); err != nil {
				return err
			}
		}
		state[id] = 2
		return nil
	}
	if err := visit(w.RootNodeID); err != nil {
		return err
	}
	if len(state) != len(w.Nodes) {
		return apperr.New(apperr.Invalid, "Every node must be reachable from the trigger.")
	}
	return nil
}

func (w *Workflow) node(id string) (*Node, error) {
	if err := checkID(id, "node"); err != nil {
		return nil, err
	}
	n := w.Nodes[id]
	if n == nil {
		return nil, errNodeNotFound
	}
	return n, nil
}

func (w *Workflow) add(n *Node) {
	n.WorkflowID = w.ID
	if n.Next == nil {
		n.Next = []string{}
	}
	w.Nodes[n.ID] = n
}

func (w *Workflow) remove(id string) {
	delete(w.Nodes, id)
	w.removed = append(w.removed, id)
}

// replaceEdge makes parent point to to instead of from (in place, once).
func replaceEdge(parent *Node, from, to string) {
	for i, c := range parent.Next {
		if c == from {
			parent.Next[i] = to
		}
	}
	parent.Next = dedupe(parent.Next)
}

func dedupe(s []string) []string {
	out := s[:0]
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Insert modes of CreateNode (§5.16).
const (
	InsertBetween = "between"
	InsertBefore  = "before"
	InsertAfter   = "after"
)

// NodeInsert is the body of POST /v1/workflows/{id}/nodes.
type NodeInsert struct {
	ExpectedRevisionID *string
	Mode               string
	Type               string
	FromNodeID         string
	ToNodeID           string
}

// NodeResult is a mutated node with the saved workflow; Created lists the
// default children a create added.
type NodeResult struct {
	Node     *Node
	Created  []*Node
	Workflow *Workflow
}

var creatable = map[string]bool{TypeAudienceFilter: true, TypeBranch: true, TypeExperiment: true, TypeTimer: true, TypeSendEmail: true, TypeVariant: true}

// CreateNode inserts a node (with its default children for branch and
// experiment nodes) between two connected nodes, before a node (on every
// incoming connection) or after a node with exactly one child.
func (s *Service) CreateNode(ctx context.Context, teamID, wfID string, in NodeInsert) (NodeResult, error) {
	var res NodeResult
	if !creatable[in.Type] {
		return res, apperr.New(apperr.Invalid, "nodeTypeName must be one of AudienceFilter, BranchNode, ExperimentBranchNode, TimerAction, SendEmailAction, VariantNode.")
	}
	if in.Type == TypeSendEmail && s.cfg.Messages != nil {
		if err := s.cfg.Messages.Begin(ctx, teamID); err != nil {
			return res, err
		}
	}
	w, err := s.mutate(ctx, teamID, wfID, in.ExpectedRevisionID, true, func(tx db.Tx, w *Workflow) error {
		var parents []*Node
		var to *Node
		switch in.Mode {
		case InsertBetween, InsertAfter:
			from, err := w.node(in.FromNodeID)
			if err != nil {
				return err
			}
			if in.Mode == InsertAfter {
				if from.Type == TypeExit || len(from.Next) != 1 {
					return apperr.New(apperr.Invalid, `insertMode "after" needs a fromNodeId with exactly one outgoing connection.`)
				}
				to = w.Nodes[from.Next[0]]
			} else {
				if to, err = w.node(in.ToNodeID); err != nil {
					return err
				}
				if !slices.Contains(from.Next, to.ID) {
					return apperr.New(apperr.Invalid, "fromNodeId does not point to toNodeId.")
				}
			}
			if from.Type == TypeExperiment {
				if in.Type != TypeVariant {
					return apperr.New(apperr.Invalid, "Only a VariantNode can be inserted directly under an ExperimentBranchNode.")
				}
				if to.Type == TypeVariant {
					return apperr.New(apperr.Invalid, "toNodeId is already a VariantNode.")
				}
			} else if in.Type == TypeVariant {
				return apperr.New(apperr.Invalid, "A VariantNode can only be inserted directly under an ExperimentBranchNode.")
			}
			parents = []*Node{from}
		case InsertBefore:
			if in.Type == TypeVariant {
				return apperr.New(apperr.Invalid, `A VariantNode cannot be inserted with insertMode "before".`)
			}
			var err error
			if to, err = w.node(in.ToNodeID); err != nil {
				return err
			}
			if IsTrigger(to.Type) {
				return apperr.New(apperr.Invalid, "A node cannot be inserted before a trigger.")
			}
			for _, pid := range w.Parents(to.ID) {
				p := w.Nodes[pid]
				if p.Type == TypeExperiment {
					return apperr.New(apperr.Invalid, "Only a VariantNode can be inserted directly under an ExperimentBranchNode.")
				}
				parents = append(parents, p)
			}
			if len(parents) == 0 {
				return apperr.New(apperr.Invalid, "toNodeId has no incoming connection.")
			}
		default:
			return apperr.New(apperr.Invalid, `insertMode must be "between", "before" or "after".`)
		}
		n, children, err := s.newNode(ctx, tx, w, in.Type)
		if err != nil {
			return err
		}
		for _, p := range parents {
			replaceEdge(p, to.ID, n.ID)
		}
		// Default children all lead to the former downstream, so each arm
		// can be extended ("after") and rerouted.
		for _, c := range children {
			c.Next = []string{to.ID}
		}
		if len(children) == 0 {
			n.Next = []string{to.ID}
		}
		res.Node, res.Created = n, children
		return nil
	})
	res.Workflow = w
	return res, err
}

// newNode adds a node of typ with its default settings and children.
func (s *Service) newNode(ctx context.Context, tx db.Tx, w *Workflow, typ string) (*Node, []*Node, error) {
	n := &Node{ID: ids.New(), Type: typ}
	var children []*Node
	switch typ {
	case TypeTimer:
		n.Unit = "m"
	case TypeSendEmail:
		if s.cfg.Messages == nil {
			return nil, nil, apperr.New(apperr.NotImplemented, "Email nodes are not available.")
		}
		m, err := s.cfg.Messages.CreateMessage(ctx, tx, w.TeamID, content.ParentWorkflow, w.ID)
		if err != nil {
			return nil, nil, err
		}
		n.EmailMessageID = &m.ID
	case TypeBranch:
		for range 2 {
			children = append(children, &Node{ID: ids.New(), Type: TypeAudienceFilter})
		}
	case TypeExperiment:
		n.SamplingRate = 50
		children = []*Node{{ID: ids.New(), Type: TypeVariant}, {ID: ids.New(), Type: TypeVariant}, {ID: ids.New(), Type: TypeVariant, Payload: Payload{IsControl: true}}}
	}
	w.add(n)
	for _, c := range children {
		w.add(c)
		n.Next = append(n.Next, c.ID)
	}
	return n, children, nil
}

// AddBranch adds a default AudienceFilter child to a BranchNode or a
// VariantNode to an ExperimentBranchNode; the result's Node is the child.
func (s *Service) AddBranch(ctx context.Context, teamID, wfID, nodeID string, expected *string) (NodeResult, error) {
	var res NodeResult
	w, err := s.mutate(ctx, teamID, wfID, expected, true, func(tx db.Tx, w *Workflow) error {
		p, err := w.node(nodeID)
		if err != nil {
			return err
		}
		c := &Node{ID: ids.New()}
		switch p.Type {
		case TypeBranch:
			c.Type = TypeAudienceFilter
		case TypeExperiment:
			c.Type = TypeVariant
		default:
			return apperr.New(apperr.Invalid, "Branches can only be added to a BranchNode or an ExperimentBranchNode.")
		}
		w.add(c)
		p.Next = append(p.Next, c.ID)
		res.Node = c
		return nil
	})
	res.Workflow = w
	return res, err
}

// Reroute points a node with exactly one outgoing connection to another
// node; its current target must keep another incoming connection.
func (s *Service) Reroute(ctx context.Context, teamID, wfID, nodeID, newTargetID string, expected *string) (NodeResult, error) {
	var res NodeResult
	w, err := s.mutate(ctx, teamID, wfID, expected, true, func(tx db.Tx, w *Workflow) error {
		src, err := w.node(nodeID)
		if err != nil {
			return err
		}
		if src.Type == TypeBranch || src.Type == TypeExperiment {
			return apperr.New(apperr.Invalid, "BranchNode and ExperimentBranchNode nodes cannot be rerouted.")
		}
		if len(src.Next) != 1 {
			return apperr.New(apperr.Invalid, "Only a node with exactly one outgoing connection can be rerouted.")
		}
		if err := checkID(newTargetID, "newTargetNodeId"); err != nil {
			return err
		}
		target := w.Nodes[newTargetID]
		if target == nil {
			return apperr.New(apperr.Invalid, "newTargetNodeId is not a node of this workflow.")
		}
		cur := src.Next[0]
		switch {
		case target.ID == cur:
			return apperr.New(apperr.Invalid, "The node already points to newTargetNodeId.")
		case target.ID == src.ID, IsTrigger(target.Type), target.Type == TypeVariant:
			return apperr.New(apperr.Invalid, "newTargetNodeId is not a valid target for this node.")
		}
		if len(w.Parents(cur)) < 2 {
			return apperr.New(apperr.Invalid, "The current target would have no incoming connection left; delete it instead.")
		}
		src.Next = []string{target.ID}
		res.Node = src
		return nil // check() refuses loops
	})
	res.Workflow = w
	return res, err
}

// NodeDelete is the body of the node delete endpoints.
type NodeDelete struct {
	ExpectedRevisionID *string
	Recursive          bool
	DryRun             bool
	Policy             string
}

// DeleteResult is the outcome of DeleteNode: Status is "dryRun",
// "queuedContactsFound" (nothing changed) or "deleted" (Workflow set).
type DeleteResult struct {
	Status             string
	NodeIDs            []string
	QueuedContactCount int
	Workflow           *Workflow
}

// DeleteNode deletes a node, reconnecting its parents to its only child
// (a node with several children needs Recursive), or with Recursive the node
// and every node only reachable through it. Queued contacts at deleted nodes
// follow the policy.
func (s *Service) DeleteNode(ctx context.Context, teamID, wfID, nodeID string, in NodeDelete) (DeleteResult, error) {
	var res DeleteResult
	if err := checkPolicy(in.Policy); err != nil {
		return res, err
	}
	w, err := s.mutate(ctx, teamID, wfID, in.ExpectedRevisionID, true, func(tx db.Tx, w *Workflow) error {
		n, err := w.node(nodeID)
		if err != nil {
			return err
		}
		if IsTrigger(n.Type) {
			return apperr.New(apperr.Invalid, "The trigger cannot be deleted.")
		}
		del := []string{n.ID}
		if in.Recursive {
			del = w.exclusive(n.ID)
		} else if len(n.Next) > 1 {
			return apperr.New(apperr.Invalid, "A node with several outgoing connections can only be deleted recursively.")
		}
		res.NodeIDs = del
		q, err := queuedCount(ctx, tx, w.ID, del)
		if err != nil {
			return err
		}
		res.QueuedContactCount = q
		switch {
		case in.DryRun:
			res.Status = "dryRun"
			return errRollback
		case q > 0 && in.Policy != PolicyDiscard:
			res.Status = "queuedContactsFound"
			return errRollback
		}
		if err := cancelRuns(ctx, tx, w.ID, del, s.now()); err != nil {
			return err
		}
		for _, pid := range w.Parents(n.ID) {
			p := w.Nodes[pid]
			if !in.Recursive && len(n.Next) == 1 {
				replaceEdge(p, n.ID, n.Next[0])
			} else {
				p.Next = slices.DeleteFunc(p.Next, func(c string) bool { return c == n.ID })
			}
		}
		for _, id := range del {
			w.remove(id)
		}
		res.Status = "deleted"
		return nil
	})
	if errors.Is(err, errRollback) {
		return res, nil
	}
	res.Workflow = w
	return res, err
}

// exclusive lists id and the nodes reachable from the root only through
// it, id first.
func (w *Workflow) exclusive(id string) []string {
	reach := map[string]bool{}
	var walk func(string)
	walk = func(c string) {
		if c == id || reach[c] {
			return
		}
		reach[c] = true
		for _, x := range w.Nodes[c].Next {
			walk(x)
		}
	}
	walk(w.RootNodeID)
	out := []string{id}
	seen := map[string]bool{id: true}
	var down func(string)
	down = func(c string) {
		for _, x := range w.Nodes[c].Next {
			if !seen[x] && !reach[x] {
				seen[x] = true
				out = append(out, x)
				down(x)
			}
		}
	}
	down(id)
	return out
}
