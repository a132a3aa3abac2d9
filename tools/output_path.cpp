/// \brief Output-path checks of the CLI (output_path.hpp).
#include "output_path.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "f8gemm/check.hpp"

namespace f8gemm::cli {

namespace {

/// `path` with its symbolic links followed, as many as a kernel would (40), also where the last
/// one names a file not made yet. *hops_ran_out: true when the 40 hops ended on a link
/// (a cycle, or a chain too long to write through).
std::string follow_links(std::string path, bool* hops_ran_out = nullptr) {
  namespace fs = std::filesystem;
  int hop = 0;
  for (; hop < 40; ++hop) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) break;
    const fs::path target = fs::read_symlink(path, ec);
    if (ec) break;  // an unreadable link: the write will say why
    path = target.is_absolute() ? target.string()
                                : (fs::path(path).parent_path() / target).string();
  }
  if (hops_ran_out != nullptr) *hops_ran_out = hop == 40;
  return path;
}

/// A file of one of the kernel's own file systems: as root it opens for writing, and then
/// refuses or misreads what a table or a CSV writes (EIO, EINVAL: after the run).
bool is_kernel_file(const std::string& path) {
  struct statfs info {};
  if (statfs(path.c_str(), &info) != 0) return false;
  const auto type = static_cast<unsigned long>(info.f_type);
  static constexpr unsigned long kKernelTypes[] = {
      PROC_SUPER_MAGIC, SYSFS_MAGIC,   CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
      DEBUGFS_MAGIC,    TRACEFS_MAGIC, SECURITYFS_MAGIC,   BPF_FS_MAGIC};
  for (unsigned long kernel : kKernelTypes) {
    if (type == kernel) return true;
  }
  return false;
}

}  // namespace

std::string unwritable_reason(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  // Where it can, the check asks the kernel by opening the file, not access(): access() passes
  // root wherever the permission bits would stop others, also where the file system itself
  // refuses a new file (sysfs, procfs), and tune then learnt so only after its first shape.
  if (fs::exists(p, ec)) {
    if (fs::is_directory(p, ec)) return "it is a directory";
    // A device or a pipe is not opened here (a pipe without a reader would block). /dev/full
    // opens and takes no byte (ENOSPC at the first write, after the run).
    if (!fs::is_regular_file(p, ec)) {
      struct stat st {}, full {};
      if (stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && stat("/dev/full", &full) == 0 &&
          S_ISCHR(full.st_mode) && st.st_rdev == full.st_rdev) {
        return "it is /dev/full, which takes no bytes";
      }
      return access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
    }
    if (is_kernel_file(path)) {
      return "it is a file of the kernel (procfs, sysfs, cgroup, debugfs, tracefs, securityfs or "
             "bpffs), not a place for output";
    }
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);  // no byte changes
    if (fd < 0) return std::strerror(errno);
    close(fd);
    return "";
  }
  // A symbolic link to no file: the write will make its target, so that is what is checked.
  bool hops_ran_out = false;
  const std::string target = follow_links(path, &hops_ran_out);
  if (hops_ran_out) return std::strerror(ELOOP);
  if (target != path) {
    const std::string why = unwritable_reason(target);
    return why.empty() ? "" : why + " (where its symbolic link points: " +
                                  detail::quoted(target) + ")";
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return "no directory " + dir.string();
  // A new file: made and removed at once. EEXIST is a file that appeared meanwhile, or a
  // symbolic link made meanwhile, which the write will follow.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno == EEXIST ? "" : std::strerror(errno);
  close(fd);
  unlink(path.c_str());
  return "";
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  // Only a regular file (or one not there yet) is rewritten whole: a device, a pipe or a
  // terminal (/dev/null, /dev/stdout, /dev/stderr, /proc/self/fd/N) takes both writers as
  // asked, even where both reach one place.
  auto regular_or_new = [](const std::string& path) {
    std::error_code ec;
    const std::string lexical = fs::absolute(path, ec).lexically_normal().string();
    if (lexical.rfind("/dev/", 0) == 0 || lexical.rfind("/proc/", 0) == 0) return false;
    const fs::file_status st = fs::status(path, ec);  // through symbolic links
    return !fs::exists(st) || fs::is_regular_file(st);
  };
  if (!regular_or_new(a) || !regular_or_new(b)) return false;
  // A symbolic link to a file not made yet resolves to nothing (weakly_canonical keeps the
  // link's own name): its links are followed by hand.
  const std::string fa = follow_links(a), fb = follow_links(b);
  std::error_code ec;
  // Hard links too, where both exist; else the paths as they resolve (a new file has no inode).
  if (fs::equivalent(fa, fb, ec) && !ec) return true;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(fa, ea), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(fb, eb), eb);
  return !ea && !eb && ca == cb;  // two paths that do not resolve are not shown to be one
}

}  // namespace f8gemm::cli
