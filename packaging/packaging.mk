# packaging/packaging.mk: install, packages, DKMS.
#
#   make install [DESTDIR=...] [PREFIX=/usr]   agent, unit, udev rule, modprobe
#                                 options, config, DKMS sources (a real
#                                 install also registers ember with DKMS)
#   make uninstall [DESTDIR=...]  removes all of it (DKMS and service too)
#   make install-agent / install-dkms (and uninstall-*): one half only
#   make install-image DESTDIR=root [ARCH=arm64] [KVER=...]
#                                 an appliance root (busybox init, no
#                                 systemd or DKMS): the agent, stripped,
#                                 ember.ko in /lib/modules/KVER/extra when
#                                 built, /etc/init.d/S60ember, ember.conf
#                                 (docs/embedded.md)
#   make deb                      build/deb/ember_<v>_amd64.deb and
#                                 build/deb/ember-dkms_<v>_all.deb
#                                 (dpkg-buildpackage, in a staged copy)
#   make rpm                      build/rpm/RPMS/*/ember{,-dkms}-<v>-1.*.rpm
#   make deb PKG_VERSION=0.1.1 DEB_OUT=build/deb-0.1.1
#                                 packages of another version (the staged
#                                 sources get that VERSION): an upgrade to
#                                 test, as selftests/fleet/run.sh does
#
# Where each file goes is decided in one place, packaging/install.sh, and
# documented in docs/packaging.md.

# <v>: ./VERSION, unless PKG_VERSION is set (environment or command line).
PKG_VERSION ?= $(shell cat $(TOP)/VERSION 2>/dev/null)
PKG_OUT := build
DEB_OUT ?= $(PKG_OUT)/deb
RPM_OUT ?= $(PKG_OUT)/rpm

# Install layout (see docs/packaging.md). /etc, the unit and udev
# directories do not follow PREFIX: systemd, udev and modprobe only look
# there.
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/ember
SYSCONFDIR ?= /etc
UNITDIR ?= /lib/systemd/system
UDEVRULESDIR ?= /lib/udev/rules.d
DKMSSRCDIR ?= /usr/src

PKG_INSTALL_ENV = DESTDIR="$(DESTDIR)" BINDIR="$(BINDIR)" LIBDIR="$(LIBDIR)" \
	MANDIR="$(MANDIR)" \
	DOCDIR="$(DOCDIR)" SYSCONFDIR="$(SYSCONFDIR)" UNITDIR="$(UNITDIR)" \
	UDEVRULESDIR="$(UDEVRULESDIR)" DKMSSRCDIR="$(DKMSSRCDIR)" \
	VERSION="$(PKG_VERSION)" KVER="$(KVER)"

# dpkg-buildpackage's own parallelism, bounded like the rest of the build.
DEB_BUILD_OPTIONS ?= parallel=2 nocheck
# On a dpkg-based build host the rpm database is empty, so rpmbuild cannot
# check BuildRequires, and find-debuginfo is missing: skip both there.
RPMBUILD_FLAGS ?= $(shell rpm -q --quiet glibc 2>/dev/null || \
	echo "--nodeps --define 'debug_package %{nil}'")

CLEAN_FILES += $(DEB_OUT) $(RPM_OUT)

.PHONY: install uninstall install-agent install-dkms uninstall-agent \
	uninstall-dkms install-image uninstall-image deb rpm

install: install-agent install-dkms
uninstall:
	$(Q)$(PKG_INSTALL_ENV) packaging/install.sh uninstall all

install-agent: $(AGENT_BIN)
	$(Q)$(PKG_INSTALL_ENV) packaging/install.sh install agent
install-dkms:
	$(Q)$(PKG_INSTALL_ENV) packaging/install.sh install dkms
# strip with the target's binutils (the cross one for ARCH=arm64)
INSTALL_STRIP ?= $(CROSS_COMPILE)strip
install-image: $(AGENT_BIN)
	$(Q)$(PKG_INSTALL_ENV) STRIP="$(INSTALL_STRIP)" packaging/install.sh install image
uninstall-image:
	$(Q)$(PKG_INSTALL_ENV) packaging/install.sh uninstall image
uninstall-agent:
	$(Q)$(PKG_INSTALL_ENV) packaging/install.sh uninstall agent
uninstall-dkms:
	$(Q)$(PKG_INSTALL_ENV) packaging/install.sh uninstall dkms

# pkg_stage DIR: a clean copy of the sources (no build output) in DIR, whose
# VERSION is PKG_VERSION (the agent, the module and the packages read it).
define pkg_stage
	$(Q)rm -rf $(1) && mkdir -p $(1)
	$(Q)packaging/list-sources.sh | tar -cf - -T - | tar -xf - -C $(1)
	$(Q)echo "$(PKG_VERSION)" >$(1)/VERSION
endef

# The Debian changelog is generated from VERSION, the one place the
# version lives; its date is the last commit's, for reproducible packages.
deb:
	@echo "  DEB     $(DEB_OUT)/ (ember, ember-dkms $(PKG_VERSION))"
	$(Q)rm -rf $(DEB_OUT)
	$(call pkg_stage,$(DEB_OUT)/ember-$(PKG_VERSION))
	$(Q)cp -r packaging/debian $(DEB_OUT)/ember-$(PKG_VERSION)/debian
	$(Q)date=$$(git log -1 --format=%cD 2>/dev/null || date -R); \
	printf '%s\n' "ember ($(PKG_VERSION)) unstable; urgency=medium" "" \
		"  * Release $(PKG_VERSION)." "" \
		" -- ember developers <root@localhost>  $$date" \
		> $(DEB_OUT)/ember-$(PKG_VERSION)/debian/changelog
	$(Q)cd $(DEB_OUT)/ember-$(PKG_VERSION) && \
		DEB_BUILD_OPTIONS="$(DEB_BUILD_OPTIONS)" \
		dpkg-buildpackage -b -us -uc $(DEB_CROSS_FLAGS) > ../dpkg-buildpackage.log 2>&1 || \
		{ tail -n 40 ../dpkg-buildpackage.log; \
		  echo "make deb: dpkg-buildpackage failed, full log: $(DEB_OUT)/dpkg-buildpackage.log"; \
		  exit 1; }
	$(Q)ls -1 $(DEB_OUT)/*.deb

rpm:
	@echo "  RPM     $(RPM_OUT)/ (ember, ember-dkms $(PKG_VERSION))"
	$(Q)rm -rf $(RPM_OUT)
	$(Q)mkdir -p $(RPM_OUT)/SOURCES $(RPM_OUT)/SPECS
	$(call pkg_stage,$(RPM_OUT)/ember-$(PKG_VERSION))
	$(Q)tar -C $(RPM_OUT) -czf $(RPM_OUT)/SOURCES/ember-$(PKG_VERSION).tar.gz \
		ember-$(PKG_VERSION)
	$(Q)rm -rf $(RPM_OUT)/ember-$(PKG_VERSION)
	$(Q)sed 's/@VERSION@/$(PKG_VERSION)/g' packaging/rpm/ember.spec \
		> $(RPM_OUT)/SPECS/ember.spec
	$(Q)rpmbuild -bb --define "_topdir $(TOP)/$(RPM_OUT)" $(RPMBUILD_FLAGS) \
		$(RPM_OUT)/SPECS/ember.spec > $(RPM_OUT)/rpmbuild.log 2>&1 || \
		{ tail -n 40 $(RPM_OUT)/rpmbuild.log; \
		  echo "make rpm: rpmbuild failed, full log: $(RPM_OUT)/rpmbuild.log"; \
		  exit 1; }
	$(Q)find $(RPM_OUT)/RPMS -name '*.rpm' | sort
