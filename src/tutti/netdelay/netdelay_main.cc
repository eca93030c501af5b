// tutti-netdelay: delays the packets of one netfilter queue, the link
// delay and jitter of the namespace harness (scripts/netns_cluster.sh),
// for kernels without netem. An iptables rule sends a namespace's outgoing
// packets to the queue (`-j NFQUEUE --queue-num N`); this program holds
// each as LinkDelay says, then lets it go on. SIGHUP re-reads --control
// (a file: "DELAY_US JITTER_US"), to change a link under load.
//
//   tutti-netdelay --queue N --delay-us D --jitter-us J [--control FILE] [--seed S]
#include <arpa/inet.h>
#include <fcntl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <utility>

#include "tutti/netdelay/link_delay.h"

namespace {

volatile sig_atomic_t reload = 0;
volatile sig_atomic_t stop = 0;

tutti::Time Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<tutti::Time>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct State {
  tutti::LinkDelay link{0, 0, 1};
  std::deque<std::pair<tutti::Time, uint32_t>> held;  // (release, packet id), in release order
};

int OnPacket(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* arg) {
  auto* state = static_cast<State*>(arg);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header == nullptr) return 0;
  state->held.emplace_back(state->link.Release(Now()), ntohl(header->packet_id));
  return 0;
}

bool ReadControl(const std::string& path, State* state) {
  std::ifstream in(path);
  double delay_us = 0, jitter_us = 0;
  if (!(in >> delay_us >> jitter_us) || delay_us < 0 || jitter_us < 0) {
    std::fprintf(stderr, "tutti-netdelay: %s: expected \"DELAY_US JITTER_US\"\n", path.c_str());
    return false;
  }
  state->link.Set(tutti::Micros(delay_us), tutti::Micros(jitter_us));
  std::fprintf(stderr, "tutti-netdelay: delay %.0f us, jitter %.0f us\n", delay_us, jitter_us);
  return true;
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: tutti-netdelay --queue N --delay-us D --jitter-us J [--control FILE] [--seed S]\n"
               "Holds each packet of netfilter queue N for D ± J microseconds (uniform), in order;\n"
               "SIGHUP re-reads FILE (\"DELAY_US JITTER_US\").\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int queue = -1;
  double delay_us = 0, jitter_us = 0;
  uint64_t seed = 1;
  std::string control;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h" || i + 1 >= argc) Usage();
    const char* value = argv[++i];
    if (flag == "--queue") queue = std::atoi(value);
    else if (flag == "--delay-us") delay_us = std::atof(value);
    else if (flag == "--jitter-us") jitter_us = std::atof(value);
    else if (flag == "--control") control = value;
    else if (flag == "--seed") seed = std::strtoull(value, nullptr, 10);
    else Usage();
  }
  if (queue < 0 || queue > 65535 || delay_us < 0 || jitter_us < 0) Usage();
  State state;
  state.link = tutti::LinkDelay(tutti::Micros(delay_us), tutti::Micros(jitter_us), seed);

  nfq_handle* handle = nfq_open();
  if (handle == nullptr) {
    std::perror("tutti-netdelay: nfq_open (root, and a kernel with NETFILTER_NETLINK_QUEUE?)");
    return 1;
  }
  nfq_q_handle* q = nfq_create_queue(handle, static_cast<uint16_t>(queue), &OnPacket, &state);
  if (q == nullptr) {
    std::fprintf(stderr, "tutti-netdelay: cannot bind queue %d (another listener?)\n", queue);
    return 1;
  }
  // Only the packet's id is needed: the verdict keeps the packet in the kernel.
  nfq_set_mode(q, NFQNL_COPY_META, 0);
  nfq_set_queue_maxlen(q, 65536);
  const int fd = nfq_fd(handle);
  int big = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  struct sigaction hup{};
  hup.sa_handler = [](int) { reload = 1; };
  sigaction(SIGHUP, &hup, nullptr);
  struct sigaction term{};
  term.sa_handler = [](int) { stop = 1; };
  sigaction(SIGTERM, &term, nullptr);
  sigaction(SIGINT, &term, nullptr);
  std::fprintf(stderr, "tutti-netdelay: queue %d, delay %.0f us, jitter %.0f us\n", queue, delay_us, jitter_us);

  alignas(8) char buf[65536];
  while (!stop) {
    if (reload) {
      reload = 0;
      if (!control.empty()) ReadControl(control, &state);
    }
    // Sleep until the next release or the next packet (or 100 ms: signals).
    timespec ts{0, 100'000'000};
    if (!state.held.empty()) {
      const tutti::Duration wait = std::max<tutti::Duration>(0, state.held.front().first - Now());
      ts = {static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    }
    pollfd p{fd, POLLIN, 0};
    if (ppoll(&p, 1, &ts, nullptr) > 0) {
      for (;;) {
        const ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          if (n < 0 && errno == ENOBUFS) std::fprintf(stderr, "tutti-netdelay: queue overrun: packets lost\n");
          break;
        }
        nfq_handle_packet(handle, buf, static_cast<int>(n));
      }
    }
    const tutti::Time now = Now();
    while (!state.held.empty() && state.held.front().first <= now) {
      nfq_set_verdict(q, state.held.front().second, NF_ACCEPT, 0, nullptr);
      state.held.pop_front();
    }
  }
  // Whatever is held goes on: stopping the delay does not drop packets.
  for (const auto& [release, id] : state.held) nfq_set_verdict(q, id, NF_ACCEPT, 0, nullptr);
  nfq_destroy_queue(q);
  nfq_close(handle);
  return 0;
}
