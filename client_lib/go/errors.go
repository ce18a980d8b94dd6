package fencekeeper

import "fmt"

// ErrorCode mirrors the C ABI's fk_error_code (and the schema's Error): branch on it with
// errors.Is(err, fencekeeper.ErrTimedOut) and the other sentinels.
type ErrorCode int

const (
	CodeOK                 ErrorCode = 0
	CodeInvalidName        ErrorCode = 1
	CodeInvalidArgument    ErrorCode = 2
	CodeTimedOut           ErrorCode = 3
	CodeNotHeld            ErrorCode = 4
	CodeExpired            ErrorCode = 5
	CodeLost               ErrorCode = 6
	CodeZkUnavailable      ErrorCode = 7
	CodeShuttingDown       ErrorCode = 8
	CodeLimitReached       ErrorCode = 9
	CodeInternal           ErrorCode = 10
	CodePermissionDenied   ErrorCode = 11
	CodeInvalidOwner       ErrorCode = 12
	CodeModeConflict       ErrorCode = 13
	CodeSidecarUnavailable ErrorCode = 100
	CodeWrongThread        ErrorCode = 101
	CodeCancelled          ErrorCode = 102
)

// Error is every error this package returns for a code of the sidecar or the library: Code to
// branch on, Message (the code's name, then the sidecar's detail) for people.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("fencekeeper: %s", e.Message) }

// Is matches the sentinel of the same code (errors.Is(err, ErrTimedOut)); ErrLost matches an
// expiry too, as in every other client (an expired lease is a lost one).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Message != "" {
		return false
	}
	return t.Code == e.Code || (t.Code == CodeLost && e.Code == CodeExpired)
}

// Sentinels for errors.Is.
var (
	ErrInvalidName        = &Error{Code: CodeInvalidName}
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrTimedOut           = &Error{Code: CodeTimedOut}
	ErrNotHeld            = &Error{Code: CodeNotHeld}
	ErrExpired            = &Error{Code: CodeExpired}
	ErrLost               = &Error{Code: CodeLost}
	ErrZkUnavailable      = &Error{Code: CodeZkUnavailable}
	ErrShuttingDown       = &Error{Code: CodeShuttingDown}
	ErrLimitReached       = &Error{Code: CodeLimitReached}
	ErrInternal           = &Error{Code: CodeInternal}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied}
	ErrInvalidOwner       = &Error{Code: CodeInvalidOwner}
	ErrModeConflict       = &Error{Code: CodeModeConflict}
	ErrSidecarUnavailable = &Error{Code: CodeSidecarUnavailable}
	ErrCancelled          = &Error{Code: CodeCancelled}
)

// LossReason says why a lease was lost (Lease.LossReason).
type LossReason int

const (
	LossTTLExpired        LossReason = 0
	LossSessionLost       LossReason = 1
	LossSessionUncertain  LossReason = 2
	LossSidecarShutdown   LossReason = 3
	LossReleasedElsewhere LossReason = 4
	LossConnectionLost    LossReason = 100
	LossRenewFailed       LossReason = 101
)

func (r LossReason) String() string {
	switch r {
	case LossTTLExpired:
		return "ttl expired"
	case LossSessionLost:
		return "session lost"
	case LossSessionUncertain:
		return "session uncertain"
	case LossSidecarShutdown:
		return "sidecar shutting down"
	case LossReleasedElsewhere:
		return "released elsewhere"
	case LossConnectionLost:
		return "connection lost"
	case LossRenewFailed:
		return "renew failed"
	}
	return fmt.Sprintf("loss reason %d", int(r))
}
