/* cmd_calibrate.c - `gcdp calibrate`: calibration matrix -> θ JSON (public or private),
 * and `gcdp calibrate --check FILE` to validate an existing θ. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "app.h"
#include "cal/calibrate.h"
#include "cal/matrix.h"
#include "cal/publish.h"
#include "cal/theta.h"
#include "core/dp_rng.h"
#include "core/log.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcdp calibrate -i FILE [-f csv|occupancy] [-o FILE] [--mode public|private]\n"
            "                      [--publish]\n"
            "       gcdp calibrate --check THETA.json\n\n"
            "Build the GC-DP parameter object theta (paper Sec. 4.1-4.4: Algorithm 1 graph,\n"
            "exposure, utility mu, empirical influence xi_hat) from a calibration matrix.\n"
            "public mode: eps_cal = 0, the input must be public data independent of the\n"
            "protected records. private mode (Sec. 4.2): spends eps_cal = eps_G + eps_tau +\n"
            "eps_mu + eps_xi (calibrate.eps_*), noise from the OS CSPRNG; recorded in theta.\n\n"
            "options:\n"
            "  -i, --input FILE    calibration matrix (required; - = standard input): CSV\n"
            "                      with a header of node names, one row per time step,\n"
            "                      complete numeric rows\n"
            "  -f, --format FMT    csv | occupancy (UCI Occupancy: temperature, humidity,\n"
            "                      light, co2, humidity_ratio; labels from Occupancy)\n"
            "                      (default: calibrate.input.format = csv)\n"
            "  -o, --output FILE   write theta here (atomic rename); default: stdout\n"
            "      --mode MODE     public | private (default: calibrate.mode = public)\n"
            "      --publish       also produce theta to topics.calibration (key = version)\n"
            "                      and wait for the broker's acknowledgement (needs\n"
            "                      broker.bootstrap, e.g. --set broker.bootstrap=@FILE)\n"
            "      --check FILE    validate a theta file strictly; exit 0 if valid, 1 if not\n"
            "  -h, --help          this help\n\n"
            "Parameters are configuration keys (defaults = paper Table 5): calibrate.L,\n"
            "lambda, tau, tau_select, tau_grid, K, alpha, gamma, tau_c, kappa, g_max,\n"
            "mask_value, coords, norm, norm_default, task, task_weights, classify.train_frac,\n"
            "eps_G, eps_tau, eps_mu, eps_xi, private.sensitivity, private.expansion_nodes,\n"
            "version, threads; `gcdp config keys` lists them with ranges.\n"
            "exit status: 0 ok, 1 runtime failure (bad data, invalid theta), 2 usage/config.\n\n%s",
            app_common_help);
}

static int check_file(const char *path)
{
    struct cal_theta *t = NULL;
    char eb[512] = "";
    core_err rc = cal_theta_load_file(path, &t, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: invalid theta: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    printf("%s: valid %s version %llu, mode %s, %zu nodes, %zu edges, %zu coordinates, "
           "eps_cal %.17g%s\n",
           path, CAL_THETA_SCHEMA, (unsigned long long)t->version, cal_mode_name(t->mode),
           t->n_nodes, t->n_edges, t->d, cal_theta_eps_cal_total(t),
           t->B ? " (release part present)" : "");
    cal_theta_free(t);
    return APP_EXIT_OK;
}

static int emit(const struct cal_theta *t, const char *out)
{
    char eb[512] = "";
    json_t *j = NULL;
    core_err rc;
    if (out) {
        rc = cal_theta_save_file(t, out, eb, sizeof(eb));
    } else {
        rc = cal_theta_to_json(t, &j, eb, sizeof(eb));
        if (rc == CORE_OK && (json_dumpf(j, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0 ||
                              putchar('\n') == EOF || fflush(stdout) != 0)) {
            snprintf(eb, sizeof(eb), "writing stdout failed");
            rc = CORE_EIO;
        }
        json_decref(j);
    }
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: %s\n", eb);
        return APP_EXIT_FAILURE;
    }
    return APP_EXIT_OK;
}

static int run(struct core_config *cfg, const char *input, const char *output, int publish)
{
    struct cal_opts o;
    struct cal_matrix *mx = NULL;
    struct cal_theta *t = NULL;
    struct cal_report rep;
    char eb[1024] = "";
    const char *base;
    core_err rc;
    int ret = APP_EXIT_FAILURE;

    if (cal_opts_from_config(cfg, &o, eb, sizeof(eb)) != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: %s\n", eb);
        return APP_EXIT_USAGE;
    }
    rc = cal_matrix_load(input, o.format, o.label_column, o.max_rows, &mx, eb, sizeof(eb));
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: %s\n", eb);
        goto out;
    }
    rc = cal_calibrate(mx, &o, o.mode == CAL_MODE_PRIVATE ? core_rng_os() : NULL, &t, &rep, eb,
                       sizeof(eb));
    core_rng_os_wipe();
    if (rc != CORE_OK) {
        fprintf(stderr, "gcdp calibrate: %s\n", eb);
        ret = rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
        goto out;
    }
    base = strrchr(input, '/');
    snprintf(t->source, sizeof(t->source), "%s:%s", o.format == CAL_FORMAT_OCCUPANCY ? "occupancy" : "csv",
             base ? base + 1 : input);
    /* identifiers, counts and timings only (DESIGN §7.4) */
    CORE_INFO("theta version=%llu mode=%s nodes=%zu rows=%zu coords=%zu edges=%zu tau=%.2f "
              "eps_cal=%.6g alg1_s=%.4f xi_s=%.4f mu_s=%.4f total_s=%.4f",
              (unsigned long long)t->version, cal_mode_name(t->mode), t->n_nodes, mx->n, t->d,
              t->n_edges, t->tau, cal_theta_eps_cal_total(t), rep.t_alg1, rep.t_xi, rep.t_mu,
              rep.t_total);
    ret = emit(t, output);
    if (ret == APP_EXIT_OK && publish) {
        rc = cal_theta_publish(cfg, t, 15000, eb, sizeof(eb));
        if (rc != CORE_OK) {
            fprintf(stderr, "gcdp calibrate: publish: %s\n", eb);
            ret = rc == CORE_ECONFIG ? APP_EXIT_USAGE : APP_EXIT_FAILURE;
        } else {
            CORE_INFO("theta version=%llu published to %s", (unsigned long long)t->version,
                      core_config_str(cfg, "topics.calibration"));
        }
    }
out:
    cal_theta_free(t);
    cal_matrix_free(mx);
    return ret;
}

int cmd_calibrate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"input", required_argument, NULL, 'i'}, {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'}, {"mode", required_argument, NULL, 'm'},
        {"check", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
        {"publish", no_argument, NULL, 'p'},
        {NULL, 0, NULL, 0},
    };
    struct core_config *cfg = NULL;
    const char *input = NULL, *output = NULL, *check = NULL;
    char eb[512] = "";
    int c, ret, publish = 0;

    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return APP_EXIT_OK;
        }
    if (app_config_load(&argc, argv, &cfg) != CORE_OK)
        return APP_EXIT_USAGE;
    core_log_set_component("calibrate");
    optind = 1;
    while ((c = getopt_long(argc, argv, "i:f:o:h", opts, NULL)) != -1) {
        core_err rc = CORE_OK;
        switch (c) {
        case 'i': input = optarg; break;
        case 'o': output = optarg; break;
        case 'c': check = optarg; break;
        case 'p': publish = 1; break;
        case 'f':
            rc = core_config_set(cfg, "calibrate.input.format", optarg, "flag", eb, sizeof(eb));
            break;
        case 'm': rc = core_config_set(cfg, "calibrate.mode", optarg, "flag", eb, sizeof(eb)); break;
        default:
            fprintf(stderr, "gcdp calibrate: see gcdp calibrate --help\n");
            core_config_free(cfg);
            return APP_EXIT_USAGE;
        }
        if (rc != CORE_OK) {
            fprintf(stderr, "gcdp calibrate: %s\n", eb);
            core_config_free(cfg);
            return APP_EXIT_USAGE;
        }
    }
    if (optind < argc || (!input && !check)) {
        fprintf(stderr, "gcdp calibrate: %s%s (see gcdp calibrate --help)\n",
                optind < argc ? "unexpected argument " : "missing -i/--input (or --check)",
                optind < argc ? argv[optind] : "");
        core_config_free(cfg);
        return APP_EXIT_USAGE;
    }
    if (publish && !check && !core_config_str(cfg, "broker.bootstrap")) {
        fprintf(stderr, "gcdp calibrate: --publish needs broker.bootstrap (e.g. --set "
                        "broker.bootstrap=@FILE written by `gcdp broker`)\n");
        core_config_free(cfg);
        return APP_EXIT_USAGE;
    }
    ret = check ? check_file(check) : run(cfg, input, output, publish);
    core_config_free(cfg);
    return ret;
}
