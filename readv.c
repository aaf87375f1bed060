/* readv.c: scatter-read the start of a file into three buffers with one readv(2) call.
 *
 *   cc -Wall -Wextra -o readv readv.c && ./readv readv.c
 *
 * The kernel fills buf1, then buf2, then buf3, in order, and may stop early at end of file.
 * The buffers are not strings: print only the bytes that landed in each one.
 * iolab's `readv` command does the same from TypeScript (npx tsx src/cli.ts readv readv.c). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "readv.c";
    char buf1[32], buf2[64], buf3[128];
    struct iovec iov[3] = {
        { .iov_base = buf1, .iov_len = sizeof buf1 },
        { .iov_base = buf2, .iov_len = sizeof buf2 },
        { .iov_base = buf3, .iov_len = sizeof buf3 },
    };

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    ssize_t n = readv(fd, iov, 3);
    if (n < 0) {
        perror("readv");
        close(fd);
        return 1;
    }
    close(fd);

    printf("Read %zd bytes:\n", n);
    size_t left = (size_t)n;
    for (int i = 0; i < 3; i++) {
        size_t used = left < iov[i].iov_len ? left : iov[i].iov_len;
        printf("buf%d: ", i + 1);
        fwrite(iov[i].iov_base, 1, used, stdout);
        putchar('\n');
        left -= used;
    }
    return 0;
}
