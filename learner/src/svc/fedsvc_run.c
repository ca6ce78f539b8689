/* fedsvc_run.c - one process's learner service, server or participant, and its closing line
 * (lrn/fedsvc.h). */
#include "lrn/fedsvc.h"

#include <inttypes.h>

core_err lrn_fedsvc_run(const struct core_config *cfg, struct core_metrics *metrics,
                        const char *participant, const char *devices, uint64_t max_sessions,
                        const atomic_bool *stop, FILE *out, const char *prog, char *eb, size_t ebn)
{
    core_err rc;

    if (!participant) {
        struct lrn_fedsvc_server_opts o = {
            .cfg = cfg, .metrics = metrics, .max_sessions = max_sessions};
        struct lrn_fedsvc_server_progress pr;
        rc = lrn_fedsvc_server_run(&o, stop, &pr, eb, ebn);
        fprintf(out,
                "%s --server: %" PRIu64 " sessions completed, last session %" PRIu64
                " at round %" PRIu64 " (%s)\n",
                prog, atomic_load(&pr.sessions_completed), atomic_load(&pr.session),
                atomic_load(&pr.round), core_strerror(rc));
        return rc;
    }
    struct lrn_fedsvc_participant_opts o = {
        .cfg = cfg, .id = participant, .devices = devices, .metrics = metrics};
    struct lrn_fedsvc_participant_progress pr;
    rc = lrn_fedsvc_participant_run(&o, stop, &pr, eb, ebn);
    fprintf(out,
            "%s --participant %s: %" PRIu64 " rows held, %" PRIu64 " skipped, %" PRIu64
            " replies (%s)\n",
            prog, participant, atomic_load(&pr.samples), atomic_load(&pr.skipped),
            atomic_load(&pr.replies), core_strerror(rc));
    return rc;
}
